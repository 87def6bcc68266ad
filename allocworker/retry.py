"""Retrying writes that lost a race to a concurrent writer.

Each attempt runs a whole write transaction afresh (the callable opens it),
so no attempt ever re-reads a stale snapshot. Only exhaustion reaches the
caller, as 409 provider.concurrent_update.
"""

import random
import time

from oslo_db import exception as db_exc
import tenacity

from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import api as db_api

# ConnectionLost: a kept connection found lost before COMMIT; nothing was
# written, so the transaction runs again on a fresh one.
RACES = (db_api.ConcurrentUpdate, db_api.ConnectionLost, db_exc.DBDeadlock,
         db_exc.DBDuplicateEntry)


def write(fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` until it commits without losing a race."""
    attempts = CONF.worker.retry_attempts
    try:
        # The first attempt runs bare: most writes win at once, and
        # building tenacity's machinery costs more than a small write's
        # own bookkeeping.
        return fn(*args, **kwargs)
    except RACES as exc:
        if attempts <= 1:
            raise _exhausted(exc)
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(RACES),
        stop=tenacity.stop_after_attempt(attempts - 1),
        wait=tenacity.wait_random(0, CONF.worker.retry_max_wait),
        reraise=True)
    time.sleep(random.uniform(0, CONF.worker.retry_max_wait))
    try:
        return retrying(fn, *args, **kwargs)
    except RACES as exc:
        raise _exhausted(exc)


def _exhausted(exc):
    return codes.Fault(
        codes.PROVIDER_CONCURRENT_UPDATE,
        'concurrent writers kept changing the same providers or '
        'consumers; gave up after %d attempts (%s)'
        % (CONF.worker.retry_attempts, type(exc).__name__))
