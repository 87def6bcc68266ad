"""The WSGI application: Placement's HTTP API, and the mirror of the RPC
calls under ``/v1/``, both behind authentication; the root document (the
version list Placement's clients start from) is served without it. CORS
(oslo.middleware, the ``[cors]`` options) wraps them all."""

from oslo_middleware import cors

from allocworker.api import auth
from allocworker.api import mirror
from allocworker.api.placement import router
from allocworker.conf import CONF


def _routed(environ, start_response):
    if environ.get('PATH_INFO', '').startswith(mirror.PREFIX):
        return mirror.application(environ, start_response)
    return router.application(environ, start_response)


def build(conf=CONF):
    """The application, authenticating as ``[api] auth_strategy`` says."""
    if conf.api.auth_strategy == 'keystone':
        protected = auth.keystone(_routed, conf)
    else:
        protected = auth.noauth2(_routed)

    def application(environ, start_response):
        if environ.get('PATH_INFO', '/') in ('', '/'):
            return router.application(environ, start_response)
        return protected(environ, start_response)

    # As in Placement's deployment: only when [cors] allowed_origin is
    # set (else OPTIONS stays a 405), and outermost, because a browser's
    # pre-flight OPTIONS carries no token.
    conf.register_opts(cors.CORS_OPTS, 'cors')
    if conf.cors.allowed_origin:
        return cors.CORS(application, conf)
    return application
