"""Refusals of keyed items kept as their first answer.

A keyed item's answer must be the only outcome its key ever has (design
§3, "Idempotent retries"): a caller whose call timed out sends it again,
and an earlier copy may still be queued or waiting for the database in
another worker. A 200 is remembered in the transaction that wrote it.
A refusal writes nothing, so it is remembered here, after its
transaction, in one of its own: were it not, a late copy of the same
call could find room that the answer said was missing and write what
its caller was told was refused (a consumer nobody knows of, or one
the caller then places a second time elsewhere).

A copy that committed between the refusal's transaction and this one
stored its answer under the key first: the caller then gets that answer
instead of the refusal, so whatever it is told is what the books hold.
"""

from oslo_log import log as logging

from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db.ledger import idempotency as db_idempotency
from allocworker import retry

LOG = logging.getLogger(__name__)

# Not remembered: a 500 may leave nothing to remember it in, and a key
# already used for another item belongs to that item.
NOT_KEPT = frozenset([codes.INTERNAL_ERROR.code,
                      codes.IDEMPOTENCY_KEY_REUSED.code])


def _kept(answer):
    return 400 <= answer['status'] < 500 and \
        answer.get('code') not in NOT_KEPT


def settle(requests, answers):
    """``answers`` (result items in call order) with the refusals of
    keyed ``requests`` (those that reached a transaction) remembered,
    each replaced by the answer of a copy that stored its key first."""
    refused = [r for r in requests
               if r.idempotency_key and _kept(answers[r.index])]
    if not refused:
        return answers
    entries = [(r.idempotency_key, r.digest, answers[r.index])
               for r in refused]
    try:
        first = retry.write(_remember, entries)
    except Exception:
        # The refusal stands: it wrote nothing, only its key is not
        # kept (a late copy may then still write).
        LOG.exception('could not remember %d refused keyed item(s)',
                      len(entries))
        return answers
    for r in refused:
        seen = first.get(r.idempotency_key)
        if seen is not None and seen.request_hash == r.digest:
            answers[r.index] = seen.answer
    return answers


def _remember(entries):
    keys = [key for key, _digest, _answer in entries]
    max_age = CONF.worker.idempotency_seconds
    with db.writer() as conn:
        db_idempotency.forget_stale(conn, keys, max_age)
        db_idempotency.remember_unless_known(conn, entries)
        return db_idempotency.lookup(conn, keys, max_age)
