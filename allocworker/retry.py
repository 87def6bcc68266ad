"""Retrying write transactions that lost a race to a concurrent writer, or
met a database that is failing over.

Each attempt runs a whole write transaction afresh (the callable opens it),
so no attempt ever re-reads a stale snapshot. Two causes, one policy:

- a *race* (generation compare-and-swap missed, deadlock or Galera
  certification failure 1213, duplicate insert): up to
  ``[worker] retry_attempts`` attempts with a short random wait; only
  exhaustion reaches the caller, as 409 provider.concurrent_update;
- the database *unavailable* (connection lost, 2013, 2006; a Galera node
  not ready or outside the Primary Component, 1047; a COMMIT it could not
  replicate, 1180): attempts with exponential back-off for up to
  ``[worker] retry_unavailable_seconds``, long enough for HAProxy to move
  to another node; exhaustion re-raises the error (the item's 500).

A COMMIT whose connection was lost may have committed. Running the
transaction again is still safe: every write is judged anew against
generations and idempotency keys, so a keyed item gets its first answer
back and an unkeyed one at worst a conflict naming the current generation.
"""

import time

from oslo_db import exception as db_exc
import tenacity

from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import api as db_api
from allocworker import metrics

RACES = (db_api.ConcurrentUpdate, db_exc.DBDeadlock,
         db_exc.DBDuplicateEntry)
# MySQL errors that mean "this node cannot commit now": lost or refused
# connections (2002, 2003, 2006, 2013), a Galera node not ready or outside
# the Primary Component (1047), a COMMIT it could not replicate (1180).
# oslo.db maps most to DBConnectionError, but not 1180, nor any raised
# while a new connection is set up (SQLAlchemy sets its isolation level
# outside oslo.db's error filters).
UNAVAILABLE_MYSQL_CODES = frozenset([1047, 1180, 2002, 2003, 2006, 2013])
# Back-off while unavailable: random up to 0.1 s, 0.2, 0.4 ... at most 2 s.
UNAVAILABLE_WAIT = tenacity.wait_random_exponential(multiplier=0.05, max=2.0)

# When the database first failed this process's writes as unavailable,
# since their last success (None while writes succeed). Once that is older
# than the retry budget, new transactions stop after one attempt, so a
# long outage fails each waiting call at once instead of once per budget.
_unavailable_since = None


def cause(exc):
    """'race', 'unavailable', or None (not retried)."""
    if isinstance(exc, RACES):
        return 'race'
    if isinstance(exc, db_exc.DBConnectionError) or \
            _mysql_code(exc) in UNAVAILABLE_MYSQL_CODES:
        return 'unavailable'
    return None


def _mysql_code(exc):
    """The driver's error number under oslo.db's and SQLAlchemy's
    wrappers, if any."""
    for _ in range(3):
        exc = getattr(exc, 'inner_exception', None) or \
            getattr(exc, 'orig', None) or exc
    args = getattr(exc, 'args', ())
    if len(args) == 2 and isinstance(args[0], int) and \
            isinstance(args[1], str):
        return args[0]
    return None


def write(fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` until it commits without losing a race
    and without the database failing over under it."""
    global _unavailable_since
    try:
        result = _retrying()(fn, *args, **kwargs)
    except RACES as exc:
        raise _exhausted(exc)
    _unavailable_since = None
    return result


def read(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, a whole read; if it met the database
    unavailable, run again under the same policy (nothing is added to a
    read that succeeds at once)."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        if cause(exc) != 'unavailable':
            raise
    return write(fn, *args, **kwargs)


_policies = {}


def _retrying():
    """The retry policy for the configured settings, built once
    (building it cost more than a small write's own bookkeeping; tenacity
    keeps each thread's attempt state apart, so one serves every
    thread)."""
    worker = CONF.worker
    settings = (worker.retry_attempts, worker.retry_max_wait,
                worker.retry_unavailable_seconds)
    policy = _policies.get(settings)
    if policy is None:
        attempts, max_wait, unavailable_seconds = settings
        race_wait = tenacity.wait_random(0, max_wait)

        def stop(state):
            if cause(state.outcome.exception()) == 'race':
                return state.attempt_number >= attempts
            return (state.seconds_since_start >= unavailable_seconds
                    or _down_longer_than(unavailable_seconds))

        def wait(state):
            if cause(state.outcome.exception()) == 'race':
                return race_wait(state)
            return UNAVAILABLE_WAIT(state)

        policy = _policies[settings] = tenacity.Retrying(
            retry=tenacity.retry_if_exception(cause), stop=stop, wait=wait,
            before_sleep=metrics.retrying, reraise=True)
    return policy


def _down_longer_than(seconds):
    global _unavailable_since
    now = time.monotonic()
    if _unavailable_since is None:
        _unavailable_since = now
    return now - _unavailable_since > seconds


def _exhausted(exc):
    return codes.Fault(
        codes.PROVIDER_CONCURRENT_UPDATE,
        'concurrent writers kept changing the same providers or '
        'consumers; gave up after %d attempts (%s)'
        % (CONF.worker.retry_attempts, type(exc).__name__))
