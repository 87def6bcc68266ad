"""Concurrent calls served by one transaction (group commit), no timer.

A call hands its work to a ``Combiner`` and waits. Whoever finds the
combiner idle leads: it takes its own work and whatever else is queued
(up to ``limit`` units, skipping work that names a key already taken, so
two calls about one consumer never share a transaction) and runs them
together. When that run ends, every call in it is answered and the
oldest call still queued is woken to lead the next run, with everything
that queued meanwhile. A call alone pays nothing: it leads at once and
runs on its own. A leader only ever runs its own batch, so no call
waits for more than the run in progress and its own.
"""

import collections
import threading


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
            lead = not self._leading
            self._leading = True
        if not lead:
            ticket.woken.wait()
        if not ticket.done:
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
            for ticket in taken:
                ticket.error = error
        else:
            for ticket, result in zip(taken, results):
                ticket.result = result
        with self._lock:
            for ticket in taken:
                ticket.done = True
                ticket.woken.set()
            if self._queue:
                self._queue[0].woken.set()
            else:
                self._leading = False
