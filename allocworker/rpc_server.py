"""The worker's RPC server: oslo.messaging's, except that a call which
waits (``wait_for_events``) is parked instead of holding a thread.

oslo.messaging serves every call on one pool of executor threads and a
call holds its thread until its endpoint returns. A waiting call's
endpoint returns at once instead: the answer if it has one already, or a
``Later``, the promise of one. The server sends the answer as usual; a
``Later`` it keeps, with the incoming message, in this process's
``Parked`` registry, and the executor thread is free again. One thread
per process (the waker) asks the waits' watcher, once every
``watcher.interval`` and at each deadline, which parked waits can be
answered now, and replies to those through their incoming messages,
exactly as oslo.messaging's own ``_process_incoming`` would have.

A parked call holds a small record, whatever its count; its caller's
call-monitor heartbeat, when the caller asked for one, is sent by the
waker as oslo.messaging's dispatcher would. On shutdown, parked calls are
answered by their events or at their deadlines while the server drains,
and any left when ``[worker] shutdown_timeout`` is near are answered as
they stand (doc/decisions/README.md, "Parked waits").
"""

from concurrent import futures
import threading
import time

from oslo_log import log as logging
from oslo_messaging.rpc import server as rpc_server
from oslo_messaging import server as messaging_server

from allocworker.conf import CONF

LOG = logging.getLogger(__name__)

WAITING_CALLS = frozenset(['wait_for_events'])
# The drain on shutdown ends this long before the worker gives up.
SHUTDOWN_MARGIN = 5.0
# Threads sending the answers of parked calls. A reply takes a pooled
# broker connection and a few round trips on it (about 4 ms here), so one
# thread would answer a burst of a thousand wakes in seconds.
REPLY_THREADS = 8


class Later(object):
    """An endpoint's answer that is not ready yet.

    ``waiting`` has a ``deadline`` (``time.monotonic()``) and a
    ``watcher`` with ``watch(waiting)``, ``settle()`` (the waitings
    answerable now, forgotten by the watcher), ``release()`` (all of
    them, forgotten), ``next_deadline()`` and ``interval`` (seconds
    between looks). ``finish(waiting)`` is the answer to send."""

    __slots__ = ('waiting', 'finish')

    def __init__(self, waiting, finish):
        self.waiting = waiting
        self.finish = finish


class _Entry(object):
    __slots__ = ('message', 'later', 'beat_every', 'next_beat')

    def __init__(self, message, later, now):
        self.message = message
        self.later = later
        # oslo.messaging's dispatcher sends a call-monitor heartbeat every
        # half client timeout while a call runs, when the caller set one.
        try:
            self.beat_every = int(message.client_timeout or 0) / 2
        except (TypeError, ValueError):
            self.beat_every = 0
        self.next_beat = now + self.beat_every


class Parked(object):
    """This process's parked calls and the thread that answers them."""

    def __init__(self):
        self._lock = threading.Lock()
        self._entries = {}  # id(waiting): _Entry
        self._beating = {}  # those of _entries whose caller wants beats
        self._watchers = {}  # id(watcher): watcher
        self._wake = threading.Event()
        self._stopping = False
        self._thread = None
        self._replies = None
        self._next_tick = 0.0  # time.monotonic() the waker looks next

    def __len__(self):
        return len(self._entries)

    def park(self, message, later):
        waiting = later.waiting
        entry = _Entry(message, later, time.monotonic())
        with self._lock:
            self._entries[id(waiting)] = entry
            if entry.beat_every:
                self._beating[id(waiting)] = entry
            self._watchers[id(waiting.watcher)] = waiting.watcher
            if self._thread is None:
                # Made on first use, after fork.
                self._replies = futures.ThreadPoolExecutor(
                    REPLY_THREADS, thread_name_prefix='reply')
                self._thread = threading.Thread(
                    target=self._run, name='waker', daemon=True)
                self._thread.start()
        waiting.watcher.watch(waiting)
        if waiting.deadline < self._next_tick:
            self._wake.set()  # its deadline comes before the next tick

    def _run(self):
        while True:
            self._next_tick = self._tick(time.monotonic())
            if self._stopping and not self._entries:
                return
            self._wake.wait(max(0.0, self._next_tick - time.monotonic()))
            self._wake.clear()

    def _tick(self, began):
        """Answer what can be answered; when to tick next: an interval
        after this one began (ticks keep their pace however long one
        takes), or at the next deadline if that is sooner."""
        next_tick = began + 1.0
        for watcher in list(self._watchers.values()):
            try:
                done = watcher.settle()
            except Exception:
                LOG.exception('settling parked calls failed; will try '
                              'again')
                done = []
            self._answer(done)
            next_tick = min(next_tick, began + watcher.interval)
            deadline = watcher.next_deadline()
            if deadline is not None:
                next_tick = min(next_tick, deadline)
        self._heartbeats()
        return next_tick

    def _answer(self, waitings):
        for waiting in waitings:
            with self._lock:
                entry = self._entries.pop(id(waiting), None)
                self._beating.pop(id(waiting), None)
            if entry is None:
                continue
            try:
                self._replies.submit(_reply, entry, waiting)
            except RuntimeError:  # the drain ended: this thread sends it
                _reply(entry, waiting)

    def _heartbeats(self):
        now = time.monotonic()
        with self._lock:
            due = [e for e in self._beating.values()
                   if e.beat_every and e.next_beat <= now]
        for entry in due:
            entry.next_beat = now + entry.beat_every
            try:
                entry.message.heartbeat()
            except Exception as exc:
                # The caller or the broker is gone; the call will time
                # out on its side, as oslo.messaging's watchdog lets it.
                LOG.debug('call-monitor heartbeat failed: %s', exc)
                entry.beat_every = 0

    def drain(self, until):
        """Let the waker answer every parked call, by ``until``
        (``time.monotonic()``); then answer those left as they stand."""
        self._stopping = True
        self._wake.set()
        thread = self._thread
        if thread is not None:
            thread.join(max(0.0, until - time.monotonic()))
        for watcher in list(self._watchers.values()):
            left = watcher.release()
            if left:
                LOG.warning('answering %d parked calls before their '
                            'deadline: the worker is stopping', len(left))
            self._answer(left)
        if self._replies is not None:
            self._replies.shutdown(wait=True)


def _reply(entry, waiting):
    try:
        entry.message.reply(entry.later.finish(waiting))
    except Exception:
        LOG.exception('could not send the answer of a parked call')


_parked = Parked()


def parked_count():
    """Calls parked in this process now (for a gauge)."""
    return len(_parked)


class _ParkingMessage(object):
    """An incoming message as oslo.messaging's ``_process_incoming`` uses
    it, except that a ``Later`` answer is parked rather than sent."""

    def __init__(self, message):
        self._message = message

    def reply(self, reply=None, failure=None):
        if failure is None and isinstance(reply, Later):
            _parked.park(self._message, reply)
        else:
            self._message.reply(reply=reply, failure=failure)

    def __getattr__(self, name):
        return getattr(self._message, name)


class Server(rpc_server.RPCServer):

    def _process_incoming(self, incoming):
        if incoming[0].message.get('method') in WAITING_CALLS:
            incoming = [_ParkingMessage(incoming[0])]
        super()._process_incoming(incoming)

    @messaging_server.ordered(after='stop')
    def wait(self):
        # oslo.messaging's wait() (an ordered task that cannot be called
        # from an override) with the parked calls between its two steps:
        # the executor first, as it may still park calls, then the parked
        # calls, then the listener.
        started = time.monotonic()
        self._work_executor.shutdown(wait=True)
        _parked.drain(started + max(
            0.0, CONF.worker.shutdown_timeout - SHUTDOWN_MARGIN))
        if self.listener:
            self.listener.cleanup()
