"""allocworker-api: the REST shim on [api] host and port (development
server; production deployments serve allocworker.cmd.wsgi:application
from uWSGI, gunicorn or mod_wsgi)."""

import gc
import signal
import socketserver
import sys
import threading
from wsgiref import simple_server

from oslo_log import log as logging

from allocworker.api import app
from allocworker.cmd import common
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker import metrics
from allocworker.metrics import endpoint as metrics_endpoint
from allocworker.metrics import health
from allocworker.metrics import tracing

LOG = logging.getLogger(__name__)


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog of 5 drops connections under a burst;
    # a dropped SYN is retried after a second, which was the whole p99.
    request_queue_size = 128


class _QuietHandler(simple_server.WSGIRequestHandler):
    def get_environ(self):
        environ = super().get_environ()
        # wsgiref makes up "text/plain" for a request without the header;
        # uWSGI and mod_wsgi leave it out, and Placement's clients rely on
        # the difference (a body without a type is a 400, not a 415).
        if self.headers.get('Content-Type') is None:
            environ.pop('CONTENT_TYPE', None)
        return environ

    def log_message(self, fmt, *args):
        LOG.info('%s %s', self.address_string(), fmt % args)


def main(argv=None):
    common.prepare(sys.argv[1:] if argv is None else argv)
    tracing.setup('api', CONF.host)
    db.configure(CONF, trace=tracing.enabled())
    endpoint = metrics_endpoint.start('api', health.api_application)
    server = simple_server.make_server(
        CONF.api.host, CONF.api.port, app.build(CONF),
        server_class=_Server, handler_class=_QuietHandler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(
        target=server.shutdown).start())
    LOG.info('allocworker-api serving on %s:%d', CONF.api.host,
             CONF.api.port)
    # As in a worker process (service._child): what lives as long as the
    # process is left out of full collections, which walked it all (half
    # the CPU of a 1,000-candidate answer of wide trees).
    gc.freeze()
    server.serve_forever()
    metrics.flush()
    if endpoint is not None:
        endpoint.stop()
    return 0
