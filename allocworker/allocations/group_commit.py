"""Concurrent calls served by one transaction (group commit), no timer.

A call hands its work to a ``Combiner`` and waits. Whoever finds the
combiner idle leads: it takes its own work and whatever else is queued
(up to ``limit`` units, skipping work that names a key already taken, so
two calls about one consumer never share a transaction) and runs them
together. When that run ends, every call in it is answered, but those
it gives back (``AGAIN``), which go back to the head of the queue, and
the oldest call still queued is woken to lead the next run, with
everything that queued meanwhile. A call alone pays nothing: it leads
at once and runs on its own. A leader only ever runs its own batch, so
no call waits for more than the run in progress and its own, and one
more for each time it is given back.
"""

import collections
import threading

# What ``run`` gives for a work it left for the next run: its call waits
# on, at the head of the queue.
AGAIN = object()


class _Ticket(object):
    __slots__ = ('work', 'size', 'keys', 'woken', 'done', 'result',
                 'error')

    def __init__(self, work, size, keys):
        self.work, self.size, self.keys = work, size, keys
        self.woken = threading.Event()
        self.done = False
        self.result = self.error = None


class Combiner(object):
    """Serve ``run([work, ...]) -> [result, ...]`` (same order) for
    concurrent callers of ``submit``, one run at a time; ``limit()`` is
    how many units one run takes at most."""

    def __init__(self, run, limit):
        self._run = run
        self._limit = limit
        self._lock = threading.Lock()
        self._queue = collections.deque()
        self._leading = False

    def submit(self, work, size=1, keys=()):
        """``work``'s result, run alone or beside concurrent calls'.

        ``size`` counts against the run's limit (a call bigger than the
        limit runs alone); ``keys`` are what two works in one run must
        not share. If ``run`` raises, every work of that run raises it.
        """
        ticket = _Ticket(work, size, frozenset(keys))
        with self._lock:
            self._queue.append(ticket)
            if not self._leading:
                self._leading = True
                ticket.woken.set()
        while True:
            # Woken to lead a run, or with its result.
            ticket.woken.wait()
            ticket.woken.clear()
            if ticket.done:
                break
            self._lead()
        if ticket.error is not None:
            raise ticket.error
        return ticket.result

    def _take(self):
        """The oldest ticket (this leader's own) and those that fit."""
        limit = self._limit()
        with self._lock:
            taken = [self._queue.popleft()]
            size, keys = taken[0].size, set(taken[0].keys)
            kept = collections.deque()
            while self._queue:
                ticket = self._queue.popleft()
                if size + ticket.size > limit or \
                        not keys.isdisjoint(ticket.keys):
                    kept.append(ticket)
                    continue
                taken.append(ticket)
                size += ticket.size
                keys.update(ticket.keys)
            self._queue = kept
        return taken

    def _lead(self):
        taken = self._take()
        try:
            results = self._run([t.work for t in taken])
        except BaseException as error:
            results = [None] * len(taken)
            for ticket in taken:
                ticket.error = error
        with self._lock:
            again = []
            for ticket, result in zip(taken, results):
                if result is AGAIN:
                    again.append(ticket)
                    continue
                ticket.result = result
                ticket.done = True
                ticket.woken.set()
            self._queue.extendleft(reversed(again))
            if self._queue:
                self._queue[0].woken.set()
            else:
                self._leading = False
