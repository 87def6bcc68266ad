"""Settling every parked wait of a worker process together.

The RPC server parks ``wait_for_events`` calls without a thread (see
``rpc_server``) and asks this process's ``Watcher`` which of them can be
answered: each look costs one statement for the events stored since the
last look, by any process (``Arrivals``), and one per
``waits.CHECK_CHUNK`` consumers that had new events or whose waits
reached their deadline (checked once more then); waits whose consumers
had no new event cost nothing.
"""

import collections
import heapq
import itertools
import threading
import time

from oslo_log import log as logging

from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db import events as db_events
from allocworker.events import waits

LOG = logging.getLogger(__name__)

# New events read per statement; a look reads a few such batches at most
# and the rest on the next look.
BATCH = 5000
BATCHES_PER_LOOK = 4
# Ids are taken when a row is inserted, so a transaction can commit an
# event with a lower id than one already read. An id missing below the
# highest read is looked for again until it is this old (a rolled-back
# insert's id never comes; Galera's auto_increment_increment leaves gaps
# by design). A wait whose event was missed this way still counts it at
# its deadline, when every wait is checked once more.
GAP_SECONDS = 10.0
MAX_GAPS = 10000
# Looks whose new consumers are remembered, for waits handed over after
# a look that already read their event; an older mark is simply checked.
HISTORY = 64
# A cursor not moved this long is started again from the newest id, so an
# idle process does not read the events of its idle time.
STALE_SECONDS = 10.0
# While the database cannot be read, a wait this far past its deadline is
# answered with what it has (its callers' RPC timeout is 5 s further).
LATE_SECONDS = 2.0


class Arrivals(object):
    """The consumers that had events stored since the last ``look``."""

    def __init__(self):
        self.floor = None  # every id up to here was read or given up
        self._read = set()  # ids above the floor that were read
        self._gaps = {}  # id above the floor not read yet: first missed

    def start(self):
        self.floor = db.one_statement(db_events.newest_id)
        self._read = set()
        self._gaps = {}

    def look(self):
        consumers = set()
        for _ in range(BATCHES_PER_LOOK):
            rows = db.one_statement(db_events.stored_after, self.floor,
                                    BATCH)
            consumers |= self.take(rows, time.monotonic())
            if len(rows) < BATCH:
                break
        return consumers

    def take(self, rows, now):
        """The consumers of the rows [(id, consumer_uuid)] not read
        before; the floor moved up as far as no gap holds it."""
        consumers = set()
        for event_id, consumer_uuid in rows:
            if event_id > self.floor and event_id not in self._read:
                self._read.add(event_id)
                consumers.add(consumer_uuid)
        self._advance(now)
        return consumers

    def _advance(self, now):
        top = max(self._read, default=self.floor)
        if top - self.floor - len(self._read) > MAX_GAPS:
            # A jump in the ids (a sequence cache, a restart): give up the
            # gaps rather than walk them.
            self.floor, self._read, self._gaps = top, set(), {}
            return
        for event_id in range(self.floor + 1, top):
            if event_id not in self._read:
                self._gaps.setdefault(event_id, now)
        self._gaps = {i: t for i, t in self._gaps.items()
                      if i not in self._read and now - t < GAP_SECONDS}
        self.floor = min(self._gaps) - 1 if self._gaps else top
        self._read = {i for i in self._read if i > self.floor}


class Watcher(object):
    """This process's parked waits, by consumer and by deadline."""

    def __init__(self):
        self._lock = threading.Lock()
        self._arrivals = Arrivals()
        self._looked_at = None  # time.monotonic() of the last look
        self._tick = 0  # looks so far
        self._history = collections.deque(maxlen=HISTORY)
        self._by_consumer = collections.defaultdict(set)
        self._deadlines = []  # heap of (deadline, seq, wait)
        self._seq = itertools.count()
        self._due = set()
        self.interval = CONF.events.poll_seconds

    def mark(self):
        """Before a wait's first check: the look after which an event
        stored later will show, starting the cursor if it is idle."""
        with self._lock:
            now = time.monotonic()
            if self._looked_at is None or \
                    now - self._looked_at > STALE_SECONDS:
                self._arrivals.start()
                self._looked_at = now
            return self._tick

    def watch(self, wait):
        """Take a wait that was not answerable at its first check."""
        with self._lock:
            self._by_consumer[wait.consumer_uuid].add(wait)
            heapq.heappush(self._deadlines,
                           (wait.deadline, next(self._seq), wait))
            missed = wait.mark is None or wait.mark < self._tick - HISTORY
            for tick, consumers in self._history:
                if not missed and tick > wait.mark and \
                        wait.consumer_uuid in consumers:
                    missed = True
            if missed:
                self._due.add(wait)

    def next_deadline(self):
        with self._lock:
            return self._deadlines[0][0] if self._deadlines else None

    def settle(self):
        """Look for new events; the waits answerable now, no longer
        watched (those past their deadline checked once more first).

        While the database cannot be read, waits are kept and looked at
        again, except those ``LATE_SECONDS`` past their deadline: they
        are answered as they stand, before their callers give up."""
        with self._lock:
            if not self._by_consumer:
                self._deadlines = []
                return []
            due, self._due = self._due, set()
            try:
                consumers = self._arrivals.look()
            except Exception:
                LOG.exception('could not look for new events; will try '
                              'again')
                consumers = set()
                self._due = due
            else:
                self._looked_at = time.monotonic()
                self._tick += 1
                self._history.append((self._tick, consumers))
            for consumer_uuid in consumers:
                due.update(self._by_consumer.get(consumer_uuid, ()))
            now = time.monotonic()
            while self._deadlines and self._deadlines[0][0] <= now:
                wait = heapq.heappop(self._deadlines)[2]
                if wait in self._by_consumer.get(wait.consumer_uuid, ()):
                    due.add(wait)
        try:
            waits.check(due)
        except Exception:
            LOG.exception('could not check %d parked waits; will try again',
                          len(due))
            now = time.monotonic()
            done = [w for w in due if now >= w.deadline + LATE_SECONDS]
            with self._lock:
                self._due.update(w for w in due if w not in done)
        else:
            now = time.monotonic()
            done = [w for w in due if w.answerable(now)]
        with self._lock:
            for wait in done:
                self._forget(wait)
        return done

    def release(self):
        """Every wait still watched, no longer watched (shutting down)."""
        with self._lock:
            waits = [w for ws in self._by_consumer.values() for w in ws]
            for wait in waits:
                self._forget(wait)
            self._deadlines = []
            return waits

    def _forget(self, wait):
        waits = self._by_consumer.get(wait.consumer_uuid)
        if waits is not None:
            waits.discard(wait)
            if not waits:
                del self._by_consumer[wait.consumer_uuid]


def start_wait(context, consumer_uuid, names, timeout):
    """A wait (``waits.Wait``) checked once against the events stored so
    far. Unless it is answerable already, hand it to its ``watcher``'s
    ``watch`` to be settled with the others.

    It is marked with the watcher before that first check, so an event
    stored after the check wakes it even if the watcher's next look for
    new events comes before the wait is handed over."""
    wait = waits.begin(context, consumer_uuid, names, timeout)
    if wait.pending() and wait.deadline > time.monotonic():
        wait.watcher = watcher()
        wait.mark = wait.watcher.mark()
    waits.check([wait])
    return wait


_watcher = None
_watcher_lock = threading.Lock()


def watcher():
    """This process's Watcher (made on first use, after fork)."""
    global _watcher
    with _watcher_lock:
        if _watcher is None:
            _watcher = Watcher()
        return _watcher
