"""The WSGI application: Placement's HTTP API, and the mirror of the RPC
calls under ``/v1/``, both behind authentication; the root document (the
version list Placement's clients start from) is served without it, and so
is ``/healthcheck`` (oslo.middleware's, ``[healthcheck]``; see
``metrics.health``). CORS (oslo.middleware, the ``[cors]`` options) wraps
them all; request metrics, when ``[metrics] port`` is set, wrap that."""

import re

from oslo_middleware import cors

from allocworker.api import auth
from allocworker.api import mirror
from allocworker.api.placement import router
from allocworker.conf import CONF
from allocworker import metrics
from allocworker.metrics import health
from allocworker.metrics import tracing

HEALTHCHECK = '/healthcheck'
# The route label of request metrics: a known first path segment, so
# made-up paths cannot make new series.
_ROUTES = frozenset(template.split('/')[1] for template, _ in router.ROUTES
                    if template != '/') | {mirror.PREFIX.strip('/'),
                                           HEALTHCHECK.strip('/')}


# A caller's global request id (oslo.middleware's RequestId accepts the
# same form); anything else is ignored.
_GLOBAL_REQUEST_ID = re.compile(
    r'^req-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$')


def _with_global_request_id(app):
    """``X-OpenStack-Request-ID`` into the request's context (oslo.context
    reads ``openstack.global_request_id``), so the calls it makes log,
    audit and notify under the caller's id."""
    def middleware(environ, start_response):
        inbound = environ.get('HTTP_X_OPENSTACK_REQUEST_ID', '')
        if _GLOBAL_REQUEST_ID.match(inbound):
            environ['openstack.global_request_id'] = inbound
        return app(environ, start_response)
    return middleware


def route_of(path):
    head = path.split('/')[1] if path.startswith('/') else ''
    return head if head in _ROUTES else ('root' if path in ('', '/')
                                         else 'other')


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
    healthcheck = health.api_application(conf)

    def application(environ, start_response):
        path = environ.get('PATH_INFO', '/')
        if path in ('', '/'):
            return router.application(environ, start_response)
        if path == HEALTHCHECK:
            return healthcheck(environ, start_response)
        return protected(environ, start_response)

    # As in Placement's deployment: only when [cors] allowed_origin is
    # set (else OPTIONS stays a 405), and outermost, because a browser's
    # pre-flight OPTIONS carries no token.
    conf.register_opts(cors.CORS_OPTS, 'cors')
    application = tracing.wsgi(_with_global_request_id(application))
    if conf.cors.allowed_origin:
        application = cors.CORS(application, conf)
    return metrics.wsgi(application, route_of)
