"""A service's metrics endpoint: ``GET /metrics`` (every process of the
service, merged from prometheus_client's multiprocess files, and the
books read by one statement per scrape) and ``GET /healthcheck``, served
by a thread of the service's first process on ``[metrics] host`` and
``port``.
"""

import os
import shutil
import socketserver
import tempfile
import threading
from wsgiref import simple_server

from oslo_log import log as logging
import prometheus_client
from prometheus_client import core
from prometheus_client import multiprocess

from allocworker.conf import CONF
from allocworker.db.ledger import gauges as db_gauges
from allocworker import metrics

LOG = logging.getLogger(__name__)


class Endpoint(object):

    def __init__(self, server, directory, owned):
        self.server, self.directory, self._owned = server, directory, owned
        self.port = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever, name='metrics-endpoint',
            daemon=True)
        self._thread.start()

    def process_died(self, pid):
        """Forget a dead process's live gauges (its counters stay)."""
        multiprocess.mark_process_dead(pid, self.directory)

    def forget_in_child(self):
        """In a forked child: close the inherited listening socket, so
        the port is the parent's alone."""
        self.server.socket.close()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        if self._owned:
            shutil.rmtree(self.directory, ignore_errors=True)


def start(service, health=None, conf=CONF, shared=False):
    """Turn metrics on for this process and those it forks from now on,
    and serve them (``health()``: the WSGI app of /healthcheck); None
    when ``[metrics] port`` is 0.

    ``shared``: several processes started alike (a WSGI server's) call
    this; the first to take the port serves, the others only record into
    the same directory."""
    if not conf.metrics.port:
        return None
    directory = conf.metrics.directory or os.path.join(
        tempfile.gettempdir(), 'allocworker-%s-metrics-%d'
        % (service, conf.metrics.port))
    os.makedirs(directory, exist_ok=True)
    try:
        server = simple_server.make_server(
            conf.metrics.host, conf.metrics.port, _not_yet,
            server_class=_Server, handler_class=_Handler)
    except OSError:
        if not shared:
            raise
        metrics.enable(directory)
        return None
    _forget_the_dead(directory)
    metrics.enable(directory)
    registry = prometheus_client.CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=directory)
    registry.register(Books(conf))
    server.set_app(_application(prometheus_client.make_wsgi_app(registry),
                                health and health()))
    LOG.info('%s metrics on http://%s:%d/metrics (files in %s)', service,
             conf.metrics.host, server.server_address[1], directory)
    return Endpoint(server, directory, not conf.metrics.directory)


def _not_yet(environ, start_response):
    start_response('503 Service Unavailable', [])
    return []


def _forget_the_dead(directory):
    """Remove the files of processes that are gone: an earlier run's
    counters would add to this one's. (A file whose pid is in use again
    by another program survives; its counts would add too.)"""
    for name in os.listdir(directory):
        pid = name.rsplit('_', 1)[-1][:-len('.db')]
        if not name.endswith('.db') or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            os.remove(os.path.join(directory, name))
        except PermissionError:
            pass


def _application(metrics_app, health):
    def application(environ, start_response):
        path = environ.get('PATH_INFO') or '/'
        if path == '/healthcheck' and health is not None:
            return health(environ, start_response)
        if path in ('/', '/metrics'):
            return metrics_app(environ, start_response)
        start_response('404 Not Found', [('Content-Type', 'text/plain')])
        return [b'GET /metrics or /healthcheck\n']
    return application


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _Handler(simple_server.WSGIRequestHandler):
    def log_message(self, fmt, *args):
        LOG.debug('metrics endpoint: %s %s', self.address_string(),
                  fmt % args)


class Books(object):
    """The books as gauges: capacity ((total - reserved) x allocation
    ratio), used and reserved per resource class over the cloud and per
    partition, and per provider when ``[metrics] per_provider``; one
    statement per scrape, from the usage counters."""

    def __init__(self, conf):
        self._conf = conf

    def collect(self):
        per_provider = self._conf.metrics.per_provider
        up = core.GaugeMetricFamily(
            'allocworker_books_up', '1 when the last scrape read the '
            'books from the database, else 0.')
        try:
            books = db_gauges.books(self._conf.database.connection,
                                    per_provider)
        except Exception:
            LOG.exception('metrics: the books could not be read')
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from _summed(books, 'allocworker_resource_%s',
                           ', summed over the cloud.', ['resource_class'],
                           lambda book: (book.resource_class,))
        # A partition is a deployment: its series are as few as the
        # classes times the deployments (decision 0204).
        yield from _summed(books, 'allocworker_partition_resource_%s',
                           ', summed per partition.',
                           ['partition', 'resource_class'],
                           lambda book: (book.partition,
                                         book.resource_class))
        if per_provider:
            yield from _per_provider(books)


_DOCS = {
    'capacity': 'Units that may be allocated: (total - reserved) x '
                'allocation_ratio',
    'used': 'Units allocated',
    'reserved': 'Units of inventory reserved for the host itself',
}


FIELDS = ('capacity', 'used', 'reserved')


def _summed(books, name, doc, labels, key):
    """A family per field of ``books`` summed by ``key(book)`` (the
    values of ``labels``)."""
    sums = {}
    for book in books:
        total = sums.setdefault(key(book), [0.0, 0.0, 0.0])
        for index, field in enumerate(FIELDS):
            total[index] += getattr(book, field)
    for index, field in enumerate(FIELDS):
        family = core.GaugeMetricFamily(name % field, _DOCS[field] + doc,
                                        labels=labels)
        for values in sorted(sums):
            family.add_metric(list(values), sums[values][index])
        yield family


def _per_provider(books):
    # The partition adds no series (a provider lies in one) and tells
    # apart two providers of one name (names are unique per partition).
    labels = ['provider_uuid', 'provider', 'partition', 'resource_class']
    for field in FIELDS:
        family = core.GaugeMetricFamily(
            'allocworker_provider_resource_%s' % field,
            _DOCS[field] + ', per provider.', labels=labels)
        for book in books:
            family.add_metric([book.provider_uuid, book.provider_name,
                               book.partition, book.resource_class],
                              getattr(book, field))
        yield family
