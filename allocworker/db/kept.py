"""Connections kept checked out between uses, for the hot path.

oslo.db builds its engines with ``pool_pre_ping``, and enginefacade checks
a connection out of the pool for every transaction, so each one costs a
``SELECT 1`` and, with the isolation level set per checkout, a ``SET`` on
the way in or out: two or three round trips before the first statement
of a transaction, three beside a single read. A ``Keeper`` keeps a few
connections checked out instead, with their isolation level set once,
and pings one only when it has been idle for a while, which is when a
pooled connection is likely to have gone stale. A connection that fails
with a lost connection is dropped, and so are the others kept with it
(the server was probably restarted); one older than
``[database] connection_recycle_time`` goes back to the pool, which
recycles it.
"""

import atexit
import contextlib
import os
import threading
import time
import weakref

from oslo_db import exception as db_exc

# Idle longer than this, a kept connection is pinged before use.
PING_AFTER_IDLE_SECONDS = 1.0

# Connections a forked child found kept by its parent: the sockets are
# the parent's, so the child must neither use nor close them (closing
# sends a goodbye on the parent's session); they stay referenced here.
_INHERITED = []
_KEEPERS = weakref.WeakSet()


class _Kept(object):
    __slots__ = ('conn', 'born', 'used', 'epoch')

    def __init__(self, conn, epoch):
        self.conn, self.epoch = conn, epoch
        self.born = self.used = time.monotonic()


class Keeper(object):
    """Up to ``size`` idle connections of ``engine``, configured by
    ``options`` (execution options, e.g. an isolation level) once."""

    def __init__(self, engine, options, size, recycle_seconds):
        self._engine = engine
        self._options = options
        self._size = size
        self._recycle = recycle_seconds
        self._idle = []
        self._lock = threading.Lock()
        self._epoch = 0
        self._pid = os.getpid()
        _KEEPERS.add(self)

    def _take(self):
        """(kept, reused): an idle connection that passed its checks, or
        a fresh one from the pool."""
        now = time.monotonic()
        if self._pid != os.getpid():
            with self._lock:
                _INHERITED.extend(self._idle)
                self._idle = []
                self._pid = os.getpid()
        while True:
            with self._lock:
                kept = self._idle.pop() if self._idle else None
                epoch = self._epoch
            if kept is None:
                conn = self._engine.connect()
                if self._options:
                    conn = conn.execution_options(**self._options)
                return _Kept(conn, epoch), False
            if kept.epoch != epoch or kept.conn.invalidated or (
                    self._recycle > 0 and now - kept.born > self._recycle):
                _close(kept.conn)
                continue
            if now - kept.used > PING_AFTER_IDLE_SECONDS and \
                    not _alive(kept.conn):
                self.lost()
                continue
            return kept, True

    def _give(self, kept):
        kept.used = time.monotonic()
        if kept.conn.get_transaction() is not None:
            # A block that ended without COMMIT or ROLLBACK (one whose
            # COMMIT failed, say) leaves nothing behind for the next user.
            try:
                kept.conn.rollback()
            except Exception:
                _close(kept.conn)
                return
        with self._lock:
            if kept.epoch == self._epoch and len(self._idle) < self._size:
                self._idle.append(kept)
                return
        _close(kept.conn)

    def lost(self):
        """A connection was lost: drop every connection kept so far."""
        with self._lock:
            self._epoch += 1
            idle, self._idle = self._idle, []
        for kept in idle:
            _close(kept.conn)

    @contextlib.contextmanager
    def connection(self):
        """(connection, reused): kept again afterwards unless the block
        failed with its connection lost."""
        kept, reused = self._take()
        try:
            yield kept.conn, reused
        except db_exc.DBConnectionError:
            self.lost()
            _close(kept.conn)
            raise
        except BaseException:
            if kept.conn.invalidated:
                self.lost()
                _close(kept.conn)
            else:
                self._give(kept)
            raise
        self._give(kept)


@atexit.register
def _close_at_exit():
    # Closed while the interpreter still works: drivers' finalizers fail
    # noisily once it is being torn down.
    for keeper in list(_KEEPERS):
        if keeper._pid == os.getpid():
            keeper.lost()


def _alive(conn):
    try:
        conn.exec_driver_sql('SELECT 1')
        if conn.in_transaction():
            conn.rollback()
        return True
    except Exception:
        _close(conn)
        return False


def _close(conn):
    with contextlib.suppress(Exception):
        conn.close()
