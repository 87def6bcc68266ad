"""``claim`` (RPC 1.3): find where a consumer fits and write it there, in
one transaction, so concurrent schedulers never race.

One claim's transaction, in allocate's global lock order (consumers,
then groups, then providers, then projects when limits are on):

1. Lock the consumer.
2. Release what it holds, inside a savepoint that is rolled back: the
   release is an ``allocate`` of nothing, so the consumer's generation,
   project, idempotency key and the group it joins are judged by
   allocate's own rules, and the candidates are searched on the state in
   which the consumer's own allocations are free (a resize may land on
   the host it is on). A new consumer with no key and no group to join
   has nothing to release or judge there, and is searched for directly.
3. Lock the consumer's groups and drop the candidates on excluded roots
   and those a hard group policy rules out; those that bend a soft
   policy go last.
4. Try the candidates in the strategy's order, each in a savepoint:
   lock its providers and write it with ``allocate``'s transaction
   (``writes.write_in``), which judges capacity, units and groups under
   the locks. The first that fits wins; a candidate another writer
   filled is passed over. A first pass skips candidates whose providers
   another transaction holds locked (it never waits, so it never
   deadlocks) and, for ``spread``, those another claim placed in since
   they were weighed; a second pass tries those, waiting for locks.

A claim replaces the consumer's allocations in that one write, so it
never holds both the old and the new, or neither.

Steps 2 to 4 are ``placing``'s. A transaction of several claims locks
every group they judge at its start, in id order, and reads their
members once; each try that stays keeps what was read up to date
(``judgement.Judgement.keep``).

Concurrent calls that are not atomic share one transaction per worker
process, as allocate's do (``group_commit``): their claims are placed
one after the other, call by call in arrival order, each under its own
call's context, and those that ask the same share one search
(``reuse``). A shared transaction takes only the groups no other
transaction holds; a call into one held elsewhere waits for the next.
In a transaction of several claims, those for new consumers are written
together at its end (``staging``). A refused claim wrote nothing and is
its own call's answer; if the shared transaction itself fails, each call
runs again alone.
"""

from oslo_log import log as logging

from allocworker.allocations import group_commit
from allocworker.allocations import refusals
from allocworker.allocations import staging as claim_staging
from allocworker.allocations import writes
from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db.grouping import groups as db_groups
from allocworker.db.ledger import allocations as db_allocations
from allocworker import notifications
from allocworker import retry
from allocworker.scheduling import claim_groups
from allocworker.scheduling import claim_items
from allocworker.scheduling import placing
from allocworker.scheduling import reuse
from allocworker import validation

LOG = logging.getLogger(__name__)
Claim = claim_items.Claim


# -- claim -----------------------------------------------------------------

def claim(context, items, atomic=False):
    claims = claim_items.parsed(context, items)
    validation.boolean(atomic, 'atomic')
    if atomic:
        changes = []
        refusal = writes.refused([_request_of(c) for c in claims])
        results = refusal or _guarded(context, claims, changes,
                                      reuse.Searches())
    else:
        results, changes = _independent(context, claims)
    notifications.emit(context, notifications.ALLOCATION_CHANGED, changes)
    return refusals.settle(
        writes.reached([_request_of(c) for c in claims], atomic),
        writes.answers(items, results))


def _request_of(claim_or_fault):
    return getattr(claim_or_fault, 'request', claim_or_fault)


def _guarded(context, claims, changes, searches):
    """Place ``claims`` in one transaction; {index: item | Fault}."""
    return writes.guarded(_transaction, 'claim', context,
                          [c.request for c in claims], changes,
                          context, claims, searches)


def _transaction(context, claims, searches):
    with db.writer() as conn:
        known = _known(conn, [c.request.consumer_uuid for c in claims])
        if len(claims) > 1:
            known = _with_groups(conn, known, claims)
        staging = claim_staging.Staging(len(claims))
        results, changes, faults = _place_all(conn, context, claims,
                                              known, searches, staging)
        if faults:
            raise writes.BatchFailed(faults)
        staging.flush(conn)
        return results, changes


def _known(conn, consumer_uuids):
    """What every claim of a transaction starts from (``writes.
    Prelocked``): its consumers locked, and the groups they are members
    of, read once for all of them (each claim's filter and each try's
    judgement use it)."""
    return writes.Prelocked(
        db_allocations.lock_consumers(conn, consumer_uuids), {},
        db_groups.group_ids_of(conn, consumer_uuids))


def _with_groups(conn, known, claims, waiting=None):
    """``known`` with every group ``claims`` judge (their consumers' and
    those they join) locked in one statement, in id order, before any
    provider, and their members read (``claim_groups.locked``): a
    transaction of several claims takes its group locks in the global
    order, as a shared allocate does, and its claims judge what it read
    (each try kept keeps it up to date). With ``waiting`` (claims of
    ``claims``), only the groups no other transaction holds but theirs,
    which are waited for first."""
    member_of, joined = claim_groups.groups_asked(
        [c.request for c in claims], known)
    if not member_of and not joined:
        return known
    if waiting:
        db_groups.lock(conn, *claim_groups.groups_asked(
            [c.request for c in waiting], known))
    return known._replace(groups=claim_groups.locked(
        conn, member_of, joined, skip_locked=waiting is not None))


def _place_all(conn, context, claims, known, searches, staging):
    """({index: answer}, payloads, {index: Fault}) of ``claims`` placed
    one after the other in ``conn``'s transaction; a refused claim wrote
    nothing (its tries were rolled back to their savepoints). Claims for
    new consumers in no group, or only in groups the transaction locked
    and read, are held back in ``staging`` (answers filled in when it is
    flushed); any other claim flushes it first."""
    results, changes, faults = {}, [], {}
    for c in claims:
        held = staging.enabled and placing.is_new(c, known) and \
            claim_groups.covered(c.request, known)
        if not held:
            staging.flush(conn)
        placed = placing.place(conn, context, c, known, searches,
                               staging if held else None)
        if isinstance(placed, codes.Fault):
            faults[c.request.index] = placed
        else:
            results[c.request.index] = placed[0]
            changes.extend(placed[1])
    return results, changes, faults


# -- concurrent calls in one transaction -------------------------------------

class _Call(object):
    """The valid claims of one independent call, waiting for a shared
    transaction; ``deferred`` once a transaction left it out because
    another held one of its groups."""
    __slots__ = ('context', 'claims', 'deferred')

    def __init__(self, context, claims):
        self.context, self.claims = context, claims
        self.deferred = False

    def keys(self):
        return writes.call_keys([c.request for c in self.claims])


def _independent(context, claims):
    """([answer | Fault] in input order, payloads) of a call that is not
    atomic: its claims share a transaction with those of concurrent
    calls of this process (``group_commit``) and one search where they
    ask the same (``reuse``); a call alone gives each claim a
    transaction of its own. Claims into groups share as well: the
    transaction locks and reads their groups at its start
    (``_together``)."""
    valid = [c for c in claims if isinstance(c, Claim)]
    results, changes = {}, []
    if valid:
        call = _Call(context, valid)
        results, changes = _shared.submit(call, len(valid), call.keys())
    return [results.get(i, c) for i, c in enumerate(claims)], changes


def _claim_calls(calls):
    """[(results, payloads)] per call. If the shared transaction fails
    for any reason but a claim's own fault, each call runs again alone,
    so a failure shared by chance never reaches a call that would not
    have met it. A call into a group another transaction holds is given
    back, to wait for it in the next transaction (``_together``)."""
    if len(calls) == 1:
        return [_claim_alone(calls[0])]
    try:
        answered = retry.write(_together, calls)
    except Exception as exc:
        LOG.warning('a claim transaction shared by %d calls failed (%s: '
                    '%s); each call runs again on its own', len(calls),
                    type(exc).__name__, exc)
        return [_claim_alone(call) for call in calls]
    return [group_commit.AGAIN if answer is None else answer
            for answer in answered]


def _claim_alone(call):
    """One call's claims, each in a transaction of its own."""
    results, changes, searches = {}, [], reuse.Searches()
    for c in call.claims:
        results.update(_guarded(call.context, [c], changes, searches))
    return results, changes


def _together(calls):
    """The calls' claims in one transaction, judged call by call in
    arrival order, each claim under its own call's context; a refused
    claim is its call's answer and never aborts the others. A call
    whose groups another transaction holds locked is left out (None,
    ``deferred``): waiting for them would hold every other call of this
    transaction as long. A call left out once waits for its groups in
    the next, before it takes any other lock, and is placed there (a
    group it still lacks does not exist)."""
    with db.writer() as conn:
        known = _known(conn, [c.request.consumer_uuid
                              for call in calls for c in call.claims])
        known = _with_groups(
            conn, known, [c for call in calls for c in call.claims],
            waiting=[c for call in calls if call.deferred
                     for c in call.claims])
        searches, answered = reuse.Searches(), []
        staging = claim_staging.Staging(
            sum(len(call.claims) for call in calls))
        for call in calls:
            if not call.deferred and not all(
                    claim_groups.covered(c.request, known)
                    for c in call.claims):
                call.deferred = True
                answered.append(None)
                continue
            results, changes, faults = _place_all(
                conn, call.context, call.claims, known, searches, staging)
            results.update(faults)
            answered.append((results, changes))
        staging.flush(conn)
        return answered


# Independent calls of this process share transactions (group commit).
_shared = group_commit.Combiner(
    _claim_calls, lambda: CONF.scheduling.shared_claim_items)
