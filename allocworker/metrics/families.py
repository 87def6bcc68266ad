"""The metric families, recorded in prometheus_client's multiprocess mode.

Each process writes its own files under the service's directory; the
service's endpoint merges them (``metrics.endpoint``). Every label's
values come from a closed set: methods are the calls of ``calls.CALLS``,
statuses and codes the design's table (``codes.py``), causes and
outcomes the lists below, routes the REST shim's first path segments.
"""

import collections
import os
import time

import prometheus_client
from prometheus_client import values

NAMESPACE = 'allocworker'
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                   0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
# Races retry.write runs a transaction again for, by exception class
# (its own or a base's): one cause each.
RETRY_CAUSES = {
    'ConcurrentUpdate': 'generation_conflict',
    'DBDeadlock': 'deadlock',
    'ConnectionLost': 'disconnect',
    'DBConnectionError': 'disconnect',
    'DBDuplicateEntry': 'duplicate_entry',
}
CAUSES = ('generation_conflict', 'deadlock', 'disconnect',
          'duplicate_entry', 'other')
EVENT_OUTCOMES = ('stored', 'held', 'delivered', 'expired')
HTTP_METHODS = frozenset(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE',
                          'OPTIONS'])
NO_CODE = 'none'


def use_directory(directory):
    """Multiprocess mode into ``directory``. prometheus_client picks its
    value class from the environment when first imported; it is picked
    again here, so the order of imports does not matter."""
    os.environ['PROMETHEUS_MULTIPROC_DIR'] = directory
    values.ValueClass = values.get_value_class()


class Recorder(object):

    def __init__(self, directory):
        use_directory(directory)
        # Nothing is collected from this registry: the endpoint reads the
        # files. A registry of its own keeps names free for a second
        # Recorder (tests).
        registry = prometheus_client.CollectorRegistry()

        def family(kind, name, doc, labels=(), **extra):
            return kind(name, doc, labels, namespace=NAMESPACE,
                        registry=registry, **extra)

        C, H = prometheus_client.Counter, prometheus_client.Histogram
        self.calls = family(C, 'calls', 'Calls answered, by method and '
                            'envelope status.', ('method', 'status'))
        self.items = family(C, 'items', 'Items answered, by method, item '
                            'status and code ("none" for success).',
                            ('method', 'status', 'code'))
        self.latency = family(H, 'call_duration_seconds', 'Seconds from '
                              'a call\'s arrival at the worker (or the '
                              'HTTP mirror) to its answer.', ('method',),
                              buckets=LATENCY_BUCKETS)
        self.shared_items = family(
            H, 'shared_transaction_items', 'Items of concurrent allocate '
            'calls written in one shared transaction.',
            buckets=SIZE_BUCKETS)
        self.shared_calls = family(
            H, 'shared_transaction_calls', 'Allocate calls sharing one '
            'transaction.', buckets=SIZE_BUCKETS)
        self.retries = family(C, 'retries', 'Write transactions run again '
                              'after losing a race, by cause.', ('cause',))
        self.replays = family(C, 'idempotent_replays', 'Items answered '
                              'again from their idempotency key.')
        self.events = family(C, 'events', 'External events stored (for an '
                             'existing consumer), held (for one not there '
                             'yet), delivered to a waiter, expired.',
                             ('outcome',))
        self.claims = family(C, 'claims', 'Claim items by outcome: '
                             '"claimed" or the item\'s code.',
                             ('outcome',))
        self.waiters = family(prometheus_client.Gauge, 'parked_waiters',
                              'wait_for_events callers waiting now.',
                              multiprocess_mode='livesum')
        self.http = family(C, 'http_requests', 'HTTP requests to the REST '
                           'shim by route (first path segment), method '
                           'and status.', ('route', 'method', 'status'))
        self.http_latency = family(
            H, 'http_request_duration_seconds', 'Seconds the REST shim '
            'took per request, by route.', ('route',),
            buckets=LATENCY_BUCKETS)
        self._children = {}
        for cause in CAUSES:
            self._child(self.retries, cause)
        for outcome in EVENT_OUTCOMES:
            self._child(self.events, outcome)
        self.replays.inc(0)
        self.waiters.set(0)

    def _child(self, family, *labels):
        """``family.labels(*labels)``, looked up once (labels() takes a
        lock and converts every value each time)."""
        key = (id(family), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = family.labels(*labels)
        return child

    def answered(self, method, envelope, seconds):
        self._child(self.calls, method, str(envelope.get('status'))).inc()
        self._child(self.latency, method).observe(seconds)
        counts = collections.Counter(
            (item.get('status'), item.get('code', NO_CODE))
            for item in envelope.get('items') or ())
        for (status, code), count in counts.items():
            self._child(self.items, method, str(status), code).inc(count)
            if method == 'claim':
                self._child(self.claims, 'claimed' if status == 200
                            else code).inc(count)
            elif method == 'wait_for_events' and status == 200:
                self._child(self.events, 'delivered').inc(count)

    def parked_waiters(self, delta):
        self.waiters.inc(delta)

    def shared_transaction(self, calls, items):
        self.shared_calls.observe(calls)
        self.shared_items.observe(items)

    def retried(self, error):
        cause = 'other'
        for cls in type(error).__mro__:
            if cls.__name__ in RETRY_CAUSES:
                cause = RETRY_CAUSES[cls.__name__]
                break
        self._child(self.retries, cause).inc()

    def replayed(self, count):
        self.replays.inc(count)

    def events_recorded(self, events):
        held = sum(1 for e in events if e.held_until is not None)
        if held:
            self._child(self.events, 'held').inc(held)
        if len(events) > held:
            self._child(self.events, 'stored').inc(len(events) - held)

    def events_expired(self, count):
        self._child(self.events, 'expired').inc(count)

    def wsgi(self, application, route_of):
        def counted(environ, start_response):
            since = time.monotonic()
            status = []

            def starting(line, headers, exc_info=None):
                status[:] = [line[:3]]
                return start_response(line, headers, exc_info)

            try:
                return application(environ, starting)
            finally:
                route = route_of(environ.get('PATH_INFO') or '/')
                method = environ.get('REQUEST_METHOD', '')
                self._child(self.http, route, method if method in
                            HTTP_METHODS else 'other',
                            status[0] if status else '500').inc()
                self._child(self.http_latency, route).observe(
                    time.monotonic() - since)
        return counted
