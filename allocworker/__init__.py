"""allocworker: the books of a cloud's resources, kept over RPC."""

from oslo_service import backend as _service_backend

# oslo.messaging pulls in oslo.service, whose default backend is eventlet.
# allocworker is threaded; choose threading unless the importing program
# already chose a backend itself (a hook never overrides a choice).
_service_backend.register_backend_default_hook(
    lambda: _service_backend.BackendType.THREADING)

# oslo.service still imports eventlet on the way, which warns on import
# although allocworker never uses it.
import warnings as _warnings  # noqa: E402

_warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
