"""Prometheus metrics: the hooks the code calls where things happen.

Every hook is one line at its call site and does nothing but read one
global until the service turns metrics on (``[metrics] port``, see
``metrics.endpoint``); then ``metrics.families`` records into
prometheus_client's multiprocess files, which the service's endpoint
merges for all its processes. Names, labels and their bounds are listed
in doc/deployment.md ("Monitoring").

The calls are hooked once, where every call is answered (``calls.answer``):
calls, items, latency, claims, delivered events and parked waiters are all
read from there.
"""

import time

# The recorder (metrics.families.Recorder) once metrics are on.
_on = None


def enable(directory):
    """Record from now on, into ``directory`` (multiprocess mode). Call
    before forking, so that every child records too."""
    global _on
    from allocworker.metrics import families
    _on = families.Recorder(directory)


def enabled():
    return _on is not None


def flush():
    """Write this process's counts now (before a clean exit)."""
    if _on is not None:
        _on.flush()


def started(method):
    """When call ``method`` started (pass it to ``answered``)."""
    if _on is not None and method in WAITS:
        _on.parked_waiters(1)
    return time.monotonic()


def answered(method, envelope, since):
    """Call ``method`` answered with ``envelope``, started at ``since``."""
    if _on is not None:
        if method in WAITS:
            _on.parked_waiters(-1)
        _on.answered(method, envelope, time.monotonic() - since)


# Calls that park until something happens: their callers are the parked
# waiters.
WAITS = frozenset(['wait_for_events'])


def parked_waiters(delta):
    """``delta`` waiters parked (+) or gone (-): for code that parks
    waiters outside ``calls.answer``."""
    if _on is not None:
        _on.parked_waiters(delta)


def shared_transaction(calls):
    """One run of concurrent allocate calls (objects with ``requests``)
    about to be written together."""
    if _on is not None:
        _on.shared_transaction(len(calls),
                               sum(len(c.requests) for c in calls))


def retrying(retry_state):
    """tenacity's before_sleep: an attempt lost a race and runs again."""
    if _on is not None:
        _on.retried(retry_state.outcome.exception())


def replayed(count):
    """``count`` items answered from their idempotency key's record."""
    if _on is not None and count:
        _on.replayed(count)


def events_recorded(events):
    """Events stored (objects with ``held_until``: set when held)."""
    if _on is not None and events:
        _on.events_recorded(events)


def events_expired(count):
    if _on is not None and count:
        _on.events_expired(count)


def wsgi(application, route_of):
    """``application`` counting its HTTP requests by route (``route_of
    (path)``: a bounded name), method and status, when metrics are on."""
    if _on is None:
        return application
    return _on.wsgi(application, route_of)
