"""Retrying writes that lost a race to a concurrent writer.

Each attempt runs a whole write transaction afresh (the callable opens it),
so no attempt ever re-reads a stale snapshot. Only exhaustion reaches the
caller, as 409 provider.concurrent_update.
"""

from oslo_db import exception as db_exc
import tenacity

from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import api as db_api
from allocworker import metrics

# ConnectionLost: a kept connection found lost before COMMIT; nothing was
# written, so the transaction runs again on a fresh one.
RACES = (db_api.ConcurrentUpdate, db_api.ConnectionLost, db_exc.DBDeadlock,
         db_exc.DBDuplicateEntry)


def write(fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` until it commits without losing a race."""
    try:
        return _retrying()(fn, *args, **kwargs)
    except RACES as exc:
        raise _exhausted(exc)


_policies = {}


def _retrying():
    """The retry policy for the configured attempts and wait, built once
    (building it cost more than a small write's own bookkeeping; tenacity
    keeps each thread's attempt state apart, so one serves every
    thread)."""
    settings = (CONF.worker.retry_attempts, CONF.worker.retry_max_wait)
    policy = _policies.get(settings)
    if policy is None:
        attempts, max_wait = settings
        policy = _policies[settings] = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(RACES),
            stop=tenacity.stop_after_attempt(attempts),
            wait=tenacity.wait_random(0, max_wait),
            before_sleep=metrics.retrying,
            reraise=True)
    return policy


def _exhausted(exc):
    return codes.Fault(
        codes.PROVIDER_CONCURRENT_UPDATE,
        'concurrent writers kept changing the same providers or '
        'consumers; gave up after %d attempts (%s)'
        % (CONF.worker.retry_attempts, type(exc).__name__))
