"""The WSGI application: the root document, then authentication, then
the mirror of the RPC calls."""

import json

from allocworker.api import auth
from allocworker.api import mirror
from allocworker.conf import CONF
from allocworker import rpcapi


def root(environ, start_response):
    body = json.dumps({'name': 'allocworker', 'rpc_version':
                       rpcapi.VERSION, 'calls': mirror.PREFIX}).encode()
    start_response('200 OK', [('Content-Type', 'application/json'),
                              ('Content-Length', str(len(body)))])
    return [body]


def build(conf=CONF):
    """The application, authenticating as ``[api] auth_strategy`` says.
    The root document is served without authentication."""
    if conf.api.auth_strategy == 'keystone':
        protected = auth.keystone(mirror.application, conf)
    else:
        protected = auth.noauth2(mirror.application)

    def application(environ, start_response):
        if environ.get('PATH_INFO', '/') in ('', '/'):
            return root(environ, start_response)
        return protected(environ, start_response)

    return application
