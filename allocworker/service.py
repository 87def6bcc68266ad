"""Worker processes: a parent that supervises ``[worker] workers``
children, each running one RPC server on the topic.

SIGTERM (or SIGINT) to the parent is passed to every child; a child stops
taking calls, lets those in flight finish (up to ``[worker]
shutdown_timeout``), and exits 0; the parent exits 0 once all have. A child
that dies for any other reason is replaced.

With ``[metrics] port`` set, the parent serves the metrics of all its
children and the worker's health probe (``allocworker.metrics``): the
metric files' directory is emptied before the first child starts, and a
dead child's live gauges are dropped when it is reaped.
"""

import gc
import os
import signal
import threading
import time

from oslo_log import log as logging

from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker import manager
from allocworker import metrics
from allocworker.metrics import endpoint as metrics_endpoint
from allocworker.metrics import health
from allocworker.metrics import tracing
from allocworker import notifications
from allocworker import rpc
from allocworker import upkeep
from allocworker.quota import limits

LOG = logging.getLogger(__name__)
# The parent's metrics endpoint (None when [metrics] port is 0).
_endpoint = None


def serve():
    """Run the worker processes until told to stop; returns the exit code."""
    global _endpoint
    children = {}
    health.watch_processes(lambda: (len(children), CONF.worker.workers))
    _endpoint = metrics_endpoint.start('worker', health.worker_application)
    stopping = threading.Event()

    def on_signal(signum, _frame):
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    LOG.info('host %s: starting %d worker process(es) on topic %s',
             CONF.host, CONF.worker.workers, CONF.worker.topic)
    for index in range(CONF.worker.workers):
        _spawn(children, index)
    failed = 0
    while not stopping.is_set():
        pid, status = _reap()
        if not pid:
            stopping.wait(0.2)
            continue
        index = children.pop(pid, None)
        if index is None:
            continue
        _process_died(pid)
        if stopping.is_set():
            failed += status != 0
            break
        LOG.warning('worker process %d (pid %d) died with status %s; '
                    'starting a new one', index, pid, status)
        time.sleep(0.5)
        _spawn(children, index)
    LOG.info('stopping %d worker process(es)', len(children))
    for pid in children:
        _kill(pid, signal.SIGTERM)
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        if children.pop(pid, None) is not None and status != 0:
            failed += 1
    if _endpoint is not None:
        _endpoint.stop()
    return 1 if failed else 0


def _process_died(pid):
    if _endpoint is not None:
        _endpoint.process_died(pid)


def _reap():
    try:
        return os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return 0, 0


def _kill(pid, signum):
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _spawn(children, index):
    pid = os.fork()
    if pid:
        children[pid] = index
        return
    code = 1
    try:
        if _endpoint is not None:
            _endpoint.forget_in_child()
        code = _child(index)
    except BaseException:
        LOG.exception('worker process %d crashed', index)
    finally:
        logging_flush()
        os._exit(code)


def logging_flush():
    for handler in logging.getLogger().logger.handlers:
        try:
            handler.flush()
        except Exception:
            pass


def _child(index):
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    name = '%s.%d' % (CONF.host, index)
    tracing.setup('worker', name)
    db.configure(CONF, trace=tracing.enabled())
    notifications.reset()
    server = rpc.get_server([manager.Manager()], CONF.worker.topic, name)
    limits.start_reading()
    server.start()
    # What is alive now (modules, configuration, the RPC and database
    # machinery) lives as long as the process: a full collection need
    # not walk it. Unfrozen, each one took 40-60 ms, every 10-15 s under
    # load, and answered the calls in flight that much later.
    gc.freeze()
    LOG.info('worker process %d (pid %d) serving topic %s',
             index, os.getpid(), CONF.worker.topic)
    housekeeper = threading.Thread(target=_upkeep, args=(stopping,),
                                   name='upkeep', daemon=True)
    housekeeper.start()
    while not stopping.wait(1):
        pass
    LOG.info('worker process %d stopping: finishing calls in flight', index)
    watchdog = threading.Timer(CONF.worker.shutdown_timeout, _give_up)
    watchdog.daemon = True
    watchdog.start()
    server.stop()
    server.wait()
    metrics.flush()
    rpc.cleanup()
    LOG.info('worker process %d stopped', index)
    return 0


def _upkeep(stopping):
    """Periodic housekeeping beside the RPC server, never in its way:
    see allocworker.upkeep. Every process runs it; it is idempotent."""
    while not stopping.wait(CONF.worker.upkeep_interval):
        try:
            removed = upkeep.run()
            if any(removed.values()):
                LOG.info('upkeep removed %s', removed)
        except Exception:
            LOG.exception('upkeep failed; will try again')


def _give_up():
    LOG.error('calls still in flight after %ds; exiting anyway',
              CONF.worker.shutdown_timeout)
    logging_flush()
    os._exit(1)
