"""The metric families, recorded in prometheus_client's multiprocess mode.

Each process writes its own files under the service's directory; the
service's endpoint merges them (``metrics.endpoint``). Every label's
values come from a closed set: methods are the calls of ``calls.CALLS``,
statuses and codes the design's table (``codes.py``), causes and
outcomes the lists below, routes the REST shim's first path segments.

A call's updates are added up in memory and written to the files every
``FLUSH_SECONDS`` by a thread of each process (started by its first
update, so after fork): writing a value takes prometheus_client's lock,
a getpid and an mmap write, about 3-8 us each, and a call makes about
six; adding them up costs one lock for all. A process killed outright
loses its last ``FLUSH_SECONDS`` of counts; a clean stop calls
``flush``.
"""

import bisect
import collections
import os
import threading
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
FLUSH_SECONDS = 0.5


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
        self._lock = threading.Lock()
        self._pending = {}
        self._flushing = None  # the pid whose flusher runs
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

    def _count(self, updates, family, amount, *labels):
        updates.append((self._child(family, *labels).inc, amount))

    def _observe(self, updates, family, value, *labels):
        key = (id(family), labels, 'parts')
        parts = self._children.get(key)
        if parts is None:
            # A histogram's sum and buckets (prometheus_client's own
            # attributes: observe() would write both at once, each time).
            child = family.labels(*labels) if labels else family
            parts = self._children[key] = (
                child._sum.inc, [b.inc for b in child._buckets],
                child._upper_bounds)
        add_to_sum, buckets, bounds = parts
        updates.append((add_to_sum, value))
        updates.append((buckets[bisect.bisect_left(bounds, value)], 1))

    def _add(self, updates):
        with self._lock:
            pending = self._pending
            for write, amount in updates:
                pending[write] = pending.get(write, 0) + amount
            if self._flushing != os.getpid():
                self._flushing = os.getpid()
                threading.Thread(target=self._flush_forever,
                                 name='metrics-flush', daemon=True).start()

    def _flush_forever(self):
        while True:
            time.sleep(FLUSH_SECONDS)
            self.flush()

    def flush(self):
        """Write what was added up since the last flush."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for write, amount in pending.items():
            write(amount)

    def answered(self, method, envelope, seconds):
        updates = []
        self._count(updates, self.calls, 1, method,
                    str(envelope.get('status')))
        self._observe(updates, self.latency, seconds, method)
        counts = collections.Counter(
            (item.get('status'), item.get('code', NO_CODE))
            for item in envelope.get('items') or ())
        for (status, code), count in counts.items():
            self._count(updates, self.items, count, method, str(status),
                        code)
            if method == 'claim':
                self._count(updates, self.claims, count,
                            'claimed' if status == 200 else code)
            elif method == 'wait_for_events' and status == 200:
                self._count(updates, self.events, count, 'delivered')
        self._add(updates)

    def parked_waiters(self, delta):
        self.waiters.inc(delta)

    def shared_transaction(self, calls, items):
        updates = []
        self._observe(updates, self.shared_calls, calls)
        self._observe(updates, self.shared_items, items)
        self._add(updates)

    def retried(self, error):
        cause = 'other'
        for cls in type(error).__mro__:
            if cls.__name__ in RETRY_CAUSES:
                cause = RETRY_CAUSES[cls.__name__]
                break
        updates = []
        self._count(updates, self.retries, 1, cause)
        self._add(updates)

    def replayed(self, count):
        self._add([(self.replays.inc, count)])

    def events_recorded(self, events):
        held = sum(1 for e in events if e.held_until is not None)
        updates = []
        if held:
            self._count(updates, self.events, held, 'held')
        if len(events) > held:
            self._count(updates, self.events, len(events) - held, 'stored')
        self._add(updates)

    def events_expired(self, count):
        updates = []
        self._count(updates, self.events, count, 'expired')
        self._add(updates)

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
                updates = []
                self._count(updates, self.http, 1, route,
                            method if method in HTTP_METHODS else 'other',
                            status[0] if status else '500')
                self._observe(updates, self.http_latency,
                              time.monotonic() - since, route)
                self._add(updates)
        return counted
