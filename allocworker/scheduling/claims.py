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

Concurrent calls that are not atomic share one transaction per worker
process, as allocate's do (``group_commit``): their claims are placed
one after the other, call by call in arrival order, each under its own
call's context, and those that ask the same share one search
(``reuse``). In a transaction of several claims, those for new
consumers are written together at its end (``staging``). A refused
claim wrote nothing and is its own call's answer; if the shared
transaction itself fails, each call runs again alone.
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
from allocworker.scheduling import claim_tries
from allocworker.scheduling import lookup
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


def _place_all(conn, context, claims, known, searches, staging):
    """({index: answer}, payloads, {index: Fault}) of ``claims`` placed
    one after the other in ``conn``'s transaction; a refused claim wrote
    nothing (its tries were rolled back to their savepoints). Claims for
    new consumers in no group are held back in ``staging`` (answers
    filled in when it is flushed); any other claim flushes it first."""
    results, changes, faults = {}, [], {}
    for c in claims:
        held = staging.enabled and _is_new(c, known) and \
            not c.request.group_uuid and \
            not (known.group_ids or {}).get(c.request.consumer_uuid)
        if not held:
            staging.flush(conn)
        placed = _place(conn, context, c, known, searches,
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
    transaction."""
    __slots__ = ('context', 'claims')

    def __init__(self, context, claims):
        self.context, self.claims = context, claims

    def keys(self):
        return writes.call_keys([c.request for c in self.claims])


def _independent(context, claims):
    """([answer | Fault] in input order, payloads) of a call that is not
    atomic: its claims share a transaction with those of concurrent
    calls of this process (``group_commit``) and one search where they
    ask the same (``reuse``); a call alone, or one that joins a group,
    gives each claim a transaction of its own (a shared transaction
    would hold its group's lock for every call in it, and make writers
    into different groups wait for each other)."""
    valid = [c for c in claims if isinstance(c, Claim)]
    results, changes = {}, []
    if valid:
        call = _Call(context, valid)
        if any(c.request.group_uuid for c in valid):
            results, changes = _claim_alone(call)
        else:
            results, changes = _shared.submit(call, len(valid),
                                              call.keys())
    return [results.get(i, c) for i, c in enumerate(claims)], changes


def _claim_calls(calls):
    """[(results, payloads)] per call. If the shared transaction fails
    for any reason but a claim's own fault, each call runs again alone,
    so a failure shared by chance never reaches a call that would not
    have met it."""
    if len(calls) == 1:
        return [_claim_alone(calls[0])]
    try:
        return retry.write(_together, calls)
    except Exception as exc:
        LOG.warning('a claim transaction shared by %d calls failed (%s: '
                    '%s); each call runs again on its own', len(calls),
                    type(exc).__name__, exc)
        return [_claim_alone(call) for call in calls]


def _claim_alone(call):
    """One call's claims, each in a transaction of its own."""
    results, changes, searches = {}, [], reuse.Searches()
    for c in call.claims:
        results.update(_guarded(call.context, [c], changes, searches))
    return results, changes


def _together(calls):
    """The calls' claims in one transaction, judged call by call in
    arrival order, each claim under its own call's context; a refused
    claim is its call's answer and never aborts the others."""
    with db.writer() as conn:
        known = _known(conn, [c.request.consumer_uuid
                              for call in calls for c in call.claims])
        searches, answered = reuse.Searches(), []
        staging = claim_staging.Staging(
            sum(len(call.claims) for call in calls))
        for call in calls:
            results, changes, faults = _place_all(
                conn, call.context, call.claims, known, searches, staging)
            results.update(faults)
            answered.append((results, changes))
        staging.flush(conn)
        return answered


def _place(conn, context, claim, known, searches, staging):
    """(answer, notification payloads) of the first candidate that fits,
    or the claim's Fault: the candidates of the window an earlier item
    of the call asking the same placed from (``reuse``), then of one
    window of roots at a time, the next only when nothing in this one
    fitted, then the candidates passed over for last. ``staging``: where
    the write is held back, or None to write it now. A claim into
    groups searches first the roots their hard rules leave it, when
    they are few (``claim_groups.prepared``), and the whole scope only
    if nothing fits there, so that it says why."""
    # Only a new consumer's search is kept for the claims after it.
    searches = searches if _is_new(claim, known) else None
    known, roots = claim_groups.prepared(conn, claim, known,
                                         claim_tries.NEW_TYPE)
    outcome = _from_kept(conn, context, claim, known, searches, staging)
    if outcome is not None:
        return outcome
    outcome = _walk(conn, context, claim, known, searches, staging, roots)
    if roots is not None and isinstance(outcome, codes.Fault) and \
            outcome.code in (codes.CAPACITY_EXCEEDED,
                             codes.GROUP_POLICY_VIOLATION):
        outcome = _walk(conn, context, claim, known, searches, staging)
    return outcome


def _walk(conn, context, claim, known, searches, staging, roots=None):
    """``_place``'s search and tries within ``roots`` (None: the whole
    scope of the request)."""
    answered, windows = _search(conn, context, claim, known, roots)
    if isinstance(answered, codes.Fault):
        return answered
    if answered is not None:
        return answered, []
    tally = _Tally()
    outcome = _through_windows(conn, context, claim, known, searches,
                               staging, windows, tally)
    if outcome is None:
        outcome = _through_last(conn, context, claim, known, staging, tally)
    return outcome if outcome is not None else tally.refusal(claim.request)


class _Tally(object):
    """What a claim met in its windows, for its refusal if nothing fits:
    candidates found and excluded, the faults of those tried, the group
    that ruled candidates out, and the candidates left for last."""

    def __init__(self):
        self.found = self.excluded = 0
        self.faults, self.blocking, self.last = [], None, []

    def refusal(self, request):
        if self.blocking is not None and not self.faults:
            return claim_groups.ruled_out(request, self.blocking,
                                          self.found - self.excluded)
        if self.faults and all(f.code == codes.GROUP_POLICY_VIOLATION
                               for f in self.faults):
            return self.faults[-1]
        return codes.Fault(
            codes.CAPACITY_EXCEEDED,
            'items[%d]: nothing fits the request: %d candidate(s) found, '
            '%d on excluded roots, %d tried and full when locked'
            % (request.index, self.found, self.excluded, len(self.faults)))


def _from_kept(conn, context, claim, known, searches, staging):
    """The outcome of the candidates an earlier claim of the transaction
    asking the same kept (``reuse``), or None to search afresh. Never
    waiting for a lock: a fresh search is cheaper than a wait for
    another transaction's whole batch."""
    kept = searches.window(claim) if searches is not None else None
    if kept is None:
        return None
    outcome, _refused, _blocked, _stale = claim_tries.place_in(
        conn, context, claim, _not_excluded(claim, kept[0]), kept[1],
        known, staging, passes=1)
    if outcome is not None and not isinstance(outcome, codes.Fault):
        searches.placed(claim, outcome[0])
    return outcome


def _through_windows(conn, context, claim, known, searches, staging,
                     windows, tally):
    """The outcome of the first window with a candidate that fits (or a
    Fault that ends the claim), or None, ``tally`` filled in; the window
    kept in ``searches`` (unless None) for the claims after it."""
    for window in windows:
        if isinstance(window, codes.Fault):
            return window
        candidates, ids = window
        kept = _not_excluded(claim, candidates)
        tally.found += len(candidates)
        tally.excluded += len(candidates) - len(kept)
        outcome, refused, blocked, passed = claim_tries.place_in(
            conn, context, claim, kept, ids, known, staging)
        if outcome is not None:
            if searches is not None and not isinstance(outcome,
                                                       codes.Fault):
                searches.keep(claim, window, outcome[0])
            return outcome
        tally.faults.extend(refused)
        tally.blocking = tally.blocking or blocked
        if passed:
            tally.last.append((passed, ids))
    return None


def _through_last(conn, context, claim, known, staging, tally):
    """A spread claim's trees placed in since it weighed them, or held by
    another writer (most likely placing there), tried after every other
    window: it doubles up on a host only when nothing emptier fits, and
    never fails while one of them fits."""
    for passed, ids in tally.last:
        outcome, refused, _blocked, _passed = claim_tries.place_in(
            conn, context, claim, passed, ids, known, staging,
            fresh=False)
        if outcome is not None:
            return outcome
        tally.faults.extend(refused)
    return None


def _search(conn, context, claim, known, roots=None):
    """(Fault, None) when allocate's rules refuse the consumer, (answer,
    None) for a repeat of an answered idempotency key, else (None, the
    windows of candidates, within ``roots`` unless None), each window
    searched as if the consumer's allocations were released."""
    if _is_new(claim, known):
        missing = claim_groups.missing_group(claim.request, known)
        if missing is not None:
            return missing, None
        return None, _windows(conn, context, claim, None, roots)
    savepoint = conn.begin_nested()
    held = known._replace(providers={})
    try:
        released, _changes = writes.write_in(conn, context, [claim.request],
                                             claim_tries.NEW_TYPE, held)
    except writes.BatchFailed as failed:
        savepoint.rollback()
        return failed.faults[claim.request.index], None
    savepoint.rollback()
    answer = released[claim.request.index]
    if 'root_uuid' in answer or answer['status'] != 200:
        # Replayed: claims remember where they placed (``claim_tries``),
        # and a refusal stays one (``refusals``).
        return answer, None
    return None, _windows(conn, context, claim, held, roots)


def _is_new(claim, known):
    """A new consumer, as its item says, with nothing to release or
    replay: nothing for a release to judge (a group it joins is only
    looked up, ``claim_groups.missing_group``)."""
    request = claim.request
    return request.consumer_uuid not in known.consumers and not any((
        request.generation is not None, request.idempotency_key))


def _not_excluded(claim, candidates):
    return [c for c in candidates
            if c['root_uuid'] not in claim.exclude_roots]


def _windows(conn, context, claim, release, roots=None):
    """The candidates of each window in turn (within ``roots`` unless
    None), each read with the consumer's own allocations released (a
    resize may land where it is) in a savepoint rolled back before any
    is tried (``release``, the rows the release holds locked already,
    ``writes.Prelocked``; None for a new consumer); a Fault for an
    unknown class or trait."""
    source = lookup.windows(conn, claim.wanted, claim.strategy, roots)
    while True:
        savepoint = conn.begin_nested() if release else None
        try:
            if release:
                writes.write_in(conn, context, [claim.request],
                                claim_tries.NEW_TYPE, release)
            window = next(source, None)
        except codes.Fault as fault:
            window = codes.Fault(fault.code, 'items[%d].request: %s'
                                 % (claim.request.index, fault.detail))
        finally:
            if savepoint is not None:
                savepoint.rollback()
        if window is None:
            return
        yield window
        if isinstance(window, codes.Fault):
            return


# Independent calls of this process share transactions (group commit).
_shared = group_commit.Combiner(
    _claim_calls, lambda: CONF.scheduling.shared_claim_items)
