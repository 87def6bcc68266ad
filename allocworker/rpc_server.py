"""The worker's RPC server: oslo.messaging's, except that calls which
wait (``wait_for_events``) run in a pool of their own.

oslo.messaging serves every call on one pool of executor threads
(``[DEFAULT] executor_thread_pool_size``) and a call holds its thread
until it answers. A wait may take most of a minute, so waits sharing
that pool would hold back the writes queued behind them, and the pool
would have to be as large as the number of waiters instead of the size
that serves calls fastest. Here the executor thread only hands a waiting
call to the waits' pool (``[events] wait_threads``) and is free again at
once; the waiting thread dispatches and replies as usual. On shutdown,
calls in flight in both pools finish before the server is done.
"""

from concurrent import futures
import threading

from oslo_messaging.rpc import server as rpc_server
from oslo_messaging import server as messaging_server

from allocworker.conf import CONF

WAITING_CALLS = frozenset(['wait_for_events'])


class Server(rpc_server.RPCServer):

    def __init__(self, transport, target, dispatcher, executor=None):
        super().__init__(transport, target, dispatcher, executor)
        self._waits = None
        self._waits_lock = threading.Lock()

    def _waits_pool(self):
        # Two executor threads may hand over their first waits at once.
        with self._waits_lock:
            if self._waits is None:
                self._waits = futures.ThreadPoolExecutor(
                    CONF.events.wait_threads, thread_name_prefix='wait')
        return self._waits

    def _process_incoming(self, incoming):
        # Called from the executor pool; the waits' pool is made on first
        # use, after fork.
        if incoming[0].message.get('method') in WAITING_CALLS:
            self._waits_pool().submit(super()._process_incoming, incoming)
        else:
            super()._process_incoming(incoming)

    @messaging_server.ordered(after='stop')
    def wait(self):
        # oslo.messaging's wait() (an ordered task that cannot be called
        # from an override) with the waits between its two steps: the
        # executor first, as it may still hand waits over, then the
        # waits, then the listener.
        self._work_executor.shutdown(wait=True)
        if self._waits is not None:
            self._waits.shutdown(wait=True)
        if self.listener:
            self.listener.cleanup()
