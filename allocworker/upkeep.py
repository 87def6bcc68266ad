"""Housekeeping the worker runs periodically beside its RPC server."""

from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db.ledger import idempotency as db_idempotency
from allocworker.events import external as events
from allocworker import metrics


def run():
    """Expire events and idempotency keys.

    Idempotent, so every worker process may run it; returns what it
    removed as {what: count}.
    """
    removed = {'events': events.expire()}
    metrics.events_expired(removed['events'])
    with db.writer() as conn:
        removed['idempotency_keys'] = db_idempotency.expire(
            conn, CONF.worker.idempotency_seconds)
    return removed
