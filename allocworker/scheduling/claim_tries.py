"""A claim's tries of one window's candidates, each in a savepoint of the
claim's transaction (``claims`` step 4): the candidates in the
strategy's order, groups' policies kept where a candidate can keep them,
a first pass that never waits for a lock and a second that does."""

from allocworker.allocations import writes
from allocworker import codes
from allocworker.db.catalog import provider_ids
from allocworker.db.ledger import idempotency as db_idempotency
from allocworker.db import tries as db_tries
from allocworker.scheduling import choosing
from allocworker.scheduling import claim_groups

NEW_TYPE = writes.DEFAULT_CONSUMER_TYPE

# A try refused for one of these is about the candidate, not the
# consumer: the claim moves on to the next candidate.
PASS_OVER = {codes.CAPACITY_EXCEEDED, codes.ALLOCATION_UNIT_VIOLATION,
             codes.INVENTORY_NOT_FOUND, codes.PROVIDER_NOT_IN_BODY,
             codes.GROUP_POLICY_VIOLATION}


def place_in(conn, context, claim, candidates, ids, known, staging,
             passes=2, fresh=True):
    """Try one window's candidates (``ids`` {provider uuid: id}): (the
    answer and payloads, or a Fault that ends the claim, or None; the
    faults of the candidates passed over; the hard group that ruled out
    a candidate, if any; the candidates left for last: a ``spread``
    claim's trees placed in since it weighed them, or held by another
    writer, which is most likely placing there). ``known``: see
    ``claims._known``; ``passes=1`` skips the second pass, which waits
    for locks; ``fresh`` False tries those left for last."""
    request = claim.request
    provider_ids.remember(conn, ids)
    # A consumer's own tree was weighed with its allocations released,
    # emptier than it is: a resize would never stay.
    fresh_only = (fresh and claim.strategy == choosing.SPREAD and
                  request.consumer_uuid not in known.consumers)
    ordered = claim_groups.keeping_policies(
        conn, request, candidates, ids, known, NEW_TYPE,
        lambda tier: choosing.ordered(tier, claim.strategy,
                                      request.consumer_uuid))
    known = known._replace(groups=ordered.locked)
    faults, waiting = [], []
    if fresh_only:
        # Never a second pass here: the candidates passed over go last,
        # after every other window (``placing.place``).
        passes = 1
    for wait, tries in ((False, ordered), (True, waiting))[:passes]:
        for candidate in tries:
            outcome = _try(conn, context, request, candidate, ids,
                           known, staging, wait=wait, fresh_only=fresh_only)
            if outcome is None:
                waiting.append(candidate)
            elif not isinstance(outcome, codes.Fault):
                return (_placed(conn, request, candidate, *outcome), (),
                        None, ())
            elif outcome.code in PASS_OVER:
                faults.append(outcome)
            else:
                return outcome, (), None, ()
    return None, faults, ordered.blocking, (waiting if fresh_only else [])


def _try(conn, context, request, candidate, ids, known, staging, wait,
         fresh_only):
    """Write ``candidate`` in a savepoint: (answer, payloads), the Fault
    that refused it (rolled back), or None when ``wait`` is False and
    another transaction holds one of its providers, or, ``fresh_only``,
    placed in its tree since the claim weighed it (a concurrent claim
    that weighed the same window got there first: a ``spread`` claim
    that went on would double up on that host while others it weighed
    stay empty). The write is held back in ``staging`` unless it is
    None."""
    attempt = db_tries.Try(conn)
    held = {}
    if wait:
        attempt.begin()
    else:
        tree = ids.get(candidate['root_uuid']) if fresh_only else None
        taken = attempt.lock_unless_taken(
            {ids[u] for u in candidate['allocations'] if u in ids}, tree)
        if taken is None:
            return None
        if taken[1] is not None and taken[1] > candidate['tree_used']:
            attempt.undo()
            return None
        held = taken[0]
    try:
        plan = writes.judged_in(
            conn, context,
            [request._replace(allocations=candidate['allocations'])],
            NEW_TYPE, prelocked=known._replace(providers=held))
    except writes.BatchFailed as failed:
        attempt.undo()
        return failed.faults[request.index]
    if staging is None:
        results, changes = plan.commit()
        outcome = results[request.index], changes
    else:
        outcome = staging.hold(conn, plan)
    plan.groups.keep()
    attempt.keep()
    return outcome


def _placed(conn, request, candidate, answer, changes):
    # In place: a held-back claim's answer is filled in when it is
    # written (``staging``).
    answer.update(root_uuid=candidate['root_uuid'],
                  allocations=candidate['allocations'])
    if request.idempotency_key:
        # A repeat of the key answers where this claim placed.
        db_idempotency.amend(conn, request.idempotency_key, answer)
    return answer, changes
