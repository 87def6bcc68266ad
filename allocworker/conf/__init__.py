"""Every configuration option of allocworker, registered in one place.

Import ``CONF`` from here; modules never register options themselves,
except those only a library costly to import can give: osprofiler's
``[profiler]`` (``conf.profiler``) and oslo.messaging's ``[DEFAULT]
rpc_response_timeout`` (``conf.messaging``) are registered by the modules
that read them (``metrics.tracing``, ``events.waits``), so that a command
using neither starts without loading those libraries.
"""

from oslo_config import cfg

from allocworker.conf import api
from allocworker.conf import database
from allocworker.conf import events
from allocworker.conf import metrics
from allocworker.conf import partitions
from allocworker.conf import paths
from allocworker.conf import quota
from allocworker.conf import scheduling
from allocworker.conf import upgrade_levels
from allocworker.conf import worker

CONF = cfg.CONF

paths.register_opts(CONF)
database.register_opts(CONF)
worker.register_opts(CONF)
events.register_opts(CONF)
upgrade_levels.register_opts(CONF)
api.register_opts(CONF)
scheduling.register_opts(CONF)
metrics.register_opts(CONF)
quota.register_opts(CONF)
partitions.register_opts(CONF)
