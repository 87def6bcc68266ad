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
"""

import collections

from allocworker.allocations import writes
from allocworker import codes
from allocworker.groups import affinity
from allocworker import items as item_results
from allocworker import notifications
from allocworker import policy
from allocworker import validation
from allocworker.conf import CONF
from allocworker.db import allocations as db_allocations
from allocworker.db import api as db
from allocworker.db import groups as db_groups
from allocworker.db import idempotency as db_idempotency
from allocworker.db import providers as db_providers
from allocworker.scheduling import choosing
from allocworker.scheduling import lookup
from allocworker.scheduling import reuse

OWN_FIELDS = ('request', 'strategy', 'exclude_roots')
ITEM_FIELDS = tuple(f for f in writes.ITEM_FIELDS
                    if f != 'allocations') + OWN_FIELDS
NEW_TYPE = writes.DEFAULT_CONSUMER_TYPE
# A try refused for one of these is about the candidate, not the
# consumer: the claim moves on to the next candidate.
PASS_OVER = {codes.CAPACITY_EXCEEDED, codes.ALLOCATION_UNIT_VIOLATION,
             codes.INVENTORY_NOT_FOUND, codes.PROVIDER_NOT_IN_BODY,
             codes.GROUP_POLICY_VIOLATION}

Claim = collections.namedtuple(
    'Claim', ['request', 'wanted', 'strategy', 'exclude_roots'])


# -- parsing ---------------------------------------------------------------

def _parse_own(raw, index):
    """(wanted, strategy, exclude_roots) of one item."""
    where = 'items[%d]' % index
    validation.mapping(raw, where)
    validation.only_keys(raw, where, ITEM_FIELDS)
    wanted = lookup.parse(validation.required(raw, where, 'request'), where)
    strategy = raw.get('strategy', choosing.SPREAD)
    if strategy not in choosing.STRATEGIES:
        raise validation.invalid('%s.strategy must be one of %s, not %r'
                                 % (where, ', '.join(choosing.STRATEGIES),
                                    strategy))
    exclude = raw.get('exclude_roots', [])
    validation.uuid_list(exclude, where + '.exclude_roots',
                         CONF.worker.max_batch_items)
    exclude = frozenset(
        validation.uuid(u, '%s.exclude_roots[%d]' % (where, i))
        for i, u in enumerate(exclude))
    return wanted, strategy, exclude


def _as_allocate_item(raw):
    """The item as allocate sees it: its own fields, nothing allocated."""
    if not isinstance(raw, dict):
        return raw
    item = {k: v for k, v in raw.items() if k not in OWN_FIELDS}
    item['allocations'] = {}
    return item


def parsed(context, items):
    """[Claim | Fault] in input order: allocate's parsing, duplicate and
    authorization rules for the fields a claim shares with it, and the
    ``claim`` policy on the item's project."""
    validation.batch(items, 'items', CONF.worker.max_batch_items)
    own = item_results.each(items, _parse_own, 'items')
    shared = writes.prepared(context, [_as_allocate_item(i) for i in items])
    result = []
    for raw, mine, request in zip(items, own, shared):
        if isinstance(mine, codes.Fault) or isinstance(request, codes.Fault):
            result.append(mine if isinstance(mine, codes.Fault)
                          else request)
        elif not policy.allowed(context, 'claim', request.project_id):
            result.append(policy.denied(
                context, 'claim', 'consumer %s of project %s'
                % (request.consumer_uuid, request.project_id)))
        else:
            if request.idempotency_key:
                # A repeat is the same claim only with the same request.
                request = request._replace(digest=writes.item_digest(raw))
            result.append(Claim(request, *mine))
    return result


# -- claim -----------------------------------------------------------------

def claim(context, items, atomic=False):
    claims = parsed(context, items)
    validation.boolean(atomic, 'atomic')
    changes = []
    if atomic:
        refusal = writes.refused([_request_of(c) for c in claims])
        results = refusal or _guarded(context, claims, changes,
                                      reuse.Searches())
    else:
        results, searches = {}, reuse.Searches()
        for c in claims:
            results.update(_guarded(context, [c], changes, searches)
                           if isinstance(c, Claim) else {})
        results = [results.get(i, c) for i, c in enumerate(claims)]
    notifications.emit(context, notifications.ALLOCATION_CHANGED, changes)
    return writes.answers(items, results)


def _request_of(claim_or_fault):
    return getattr(claim_or_fault, 'request', claim_or_fault)


def _guarded(context, claims, changes, searches):
    """Place ``claims`` in one transaction; {index: item | Fault}."""
    return writes.guarded(_transaction, 'claim', context,
                          [c.request for c in claims], changes,
                          context, claims, searches)


def _transaction(context, claims, searches):
    with db.writer() as conn:
        existing = db_allocations.lock_consumers(
            conn, [c.request.consumer_uuid for c in claims])
        results, changes, faults = {}, [], {}
        for c in claims:
            placed = _place(conn, context, c, existing, searches)
            if isinstance(placed, codes.Fault):
                faults[c.request.index] = placed
            else:
                results[c.request.index] = placed[0]
                changes.extend(placed[1])
        if faults:
            raise writes.BatchFailed(faults)
        return results, changes


def _place(conn, context, claim, existing, searches):
    """(answer, notification payloads) of the first candidate that fits,
    or the claim's Fault: the candidates of the window an earlier item
    of the call asking the same placed from (``reuse``), then of one
    window of roots at a time, the next only when nothing in this one
    fitted."""
    request = claim.request
    new = _is_new(claim, existing)
    kept = searches.window(claim) if new else None
    if kept is not None:
        outcome, _refused, _blocked = _place_in(
            conn, context, claim, _not_excluded(claim, kept[0]), kept[1],
            existing)
        if isinstance(outcome, codes.Fault):
            return outcome
        if outcome is not None:
            searches.placed(claim, outcome[0])
            return outcome
    answered, windows = _search(conn, context, claim, existing)
    if isinstance(answered, codes.Fault):
        return answered
    if answered is not None:
        return answered, []
    found = excluded = 0
    faults, blocking = [], None
    for window in windows:
        if isinstance(window, codes.Fault):
            return window
        candidates, ids = window
        found += len(candidates)
        kept = _not_excluded(claim, candidates)
        excluded += len(candidates) - len(kept)
        outcome, refused, blocked = _place_in(conn, context, claim, kept,
                                              ids, existing)
        if outcome is not None:
            if new and not isinstance(outcome, codes.Fault):
                searches.keep(claim, window, outcome[0])
            return outcome
        faults.extend(refused)
        blocking = blocking or blocked
    if blocking is not None and not faults:
        return _ruled_out(request, blocking, found - excluded)
    if faults and all(f.code == codes.GROUP_POLICY_VIOLATION
                      for f in faults):
        return faults[-1]
    return codes.Fault(
        codes.CAPACITY_EXCEEDED,
        'items[%d]: nothing fits the request: %d candidate(s) found, %d '
        'on excluded roots, %d tried and full when locked'
        % (request.index, found, excluded, len(faults)))


def _place_in(conn, context, claim, candidates, ids, existing):
    """Try one window's candidates (``ids`` {provider uuid: id}): (the
    answer and payloads, or a Fault that ends the claim, or None; the
    faults of the candidates passed over; the hard group that ruled out
    a candidate, if any). ``existing``: the call's consumers locked."""
    request = claim.request
    db_providers.remember(conn, ids)
    # A consumer's own tree was weighed with its allocations released,
    # emptier than it is: a resize would never stay.
    fresh_only = (claim.strategy == choosing.SPREAD and
                  request.consumer_uuid not in existing)
    keeping, bending, blocking = _keeping_policies(conn, request,
                                                   candidates, ids)
    # A soft policy never refuses, but is kept whenever a candidate can.
    ordered = [c for part in (keeping, bending) for c in choosing.ordered(
        part, claim.strategy, request.consumer_uuid)]
    faults, waiting = [], []
    for wait, tries in ((False, ordered), (True, waiting)):
        for candidate in tries:
            outcome = _try(conn, context, request, candidate, ids,
                           existing, wait=wait, fresh_only=fresh_only)
            if outcome is None:
                waiting.append(candidate)
            elif not isinstance(outcome, codes.Fault):
                return _placed(conn, request, candidate, *outcome), (), None
            elif outcome.code in PASS_OVER:
                faults.append(outcome)
            else:
                return outcome, (), None
    return None, faults, blocking


def _search(conn, context, claim, existing):
    """(Fault, None) when allocate's rules refuse the consumer, (answer,
    None) for a repeat of an answered idempotency key, else (None, the
    windows of candidates), each window searched as if the consumer's
    allocations were released."""
    if _is_new(claim, existing):
        return None, _windows(conn, context, claim, None)
    savepoint = conn.begin_nested()
    held = writes.Prelocked(existing, {})
    try:
        released, _changes = writes.write_in(conn, context, [claim.request],
                                             NEW_TYPE, held)
    except writes.BatchFailed as failed:
        savepoint.rollback()
        return failed.faults[claim.request.index], None
    savepoint.rollback()
    answer = released[claim.request.index]
    if 'root_uuid' in answer:
        # Replayed: claims remember where they placed (see _placed).
        return answer, None
    return None, _windows(conn, context, claim, held)


def _is_new(claim, existing):
    """A new consumer, as its item says, with nothing to release or
    replay and no group to find: nothing for a release to judge."""
    request = claim.request
    return request.consumer_uuid not in existing and not any((
        request.generation is not None, request.idempotency_key,
        request.group_uuid))


def _not_excluded(claim, candidates):
    return [c for c in candidates
            if c['root_uuid'] not in claim.exclude_roots]


def _windows(conn, context, claim, release):
    """The candidates of each window in turn, each read with the
    consumer's own allocations released (a resize may land where it is)
    in a savepoint rolled back before any is tried (``release``, the
    rows the release holds locked already, ``writes.Prelocked``; None
    for a new consumer); a Fault for an unknown class or trait."""
    source = lookup.windows(conn, claim.wanted, claim.strategy)
    while True:
        savepoint = conn.begin_nested() if release else None
        try:
            if release:
                writes.write_in(conn, context, [claim.request], NEW_TYPE,
                                release)
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


def _keeping_policies(conn, request, candidates, ids):
    """(the candidates whose roots keep every policy of the consumer's
    groups, those that bend only soft ones, the hard group that ruled out
    the first candidate dropped)."""
    groups = _groups(conn, request)
    if not groups:
        return candidates, [], None
    hard = [g for g in groups if g.policy in affinity.HARD]
    soft = [g for g in groups if g.policy not in affinity.HARD]
    root_of = db_providers.roots_of(conn, set(ids.values()))
    kept, bending, blocking = [], [], None
    for candidate in candidates:
        roots = {root_of[ids[u]] for u in candidate['allocations']
                 if u in ids}
        broken = choosing.broken_group(hard, request.consumer_uuid, roots)
        if broken is None:
            bends = choosing.broken_group(soft, request.consumer_uuid,
                                          roots)
            (kept if bends is None else bending).append(candidate)
        elif blocking is None:
            blocking = broken
    return kept, bending, blocking


def _groups(conn, request):
    """The consumer's groups and the one it joins, locked, with their
    members' roots."""
    ids = set(db_groups.group_ids_of(conn, [request.consumer_uuid]).get(
        request.consumer_uuid, ()))
    if request.group_uuid:
        ids.update(db_groups.ids_by_uuid(conn, [request.group_uuid])
                   .values())
    if not ids:
        return []
    locked = db_groups.lock(conn, ids)
    members = db_groups.member_roots(conn, ids)
    return [choosing.PolicyGroup(g.uuid, g.policy, g.max_per_root,
                                 members[gid])
            for gid, g in sorted(locked.items())]


def _ruled_out(request, group, fitting):
    return codes.Fault(
        codes.GROUP_POLICY_VIOLATION,
        'items[%d]: %d candidate(s) fit, but the %s policy of group %s%s '
        'rules out every one of them'
        % (request.index, fitting, group.policy, group.uuid,
           ' (max_per_root %d)' % group.max_per_root
           if group.max_per_root else ''))


def _try(conn, context, request, candidate, ids, existing, wait,
         fresh_only):
    """Write ``candidate`` in a savepoint: (answer, payloads), the Fault
    that refused it (rolled back), or None when ``wait`` is False and
    another transaction holds one of its providers, or, ``fresh_only``,
    placed in its tree since the claim weighed it (a concurrent claim
    that weighed the same window got there first: a ``spread`` claim
    that went on would double up on that host while others it weighed
    stay empty)."""
    savepoint = conn.begin_nested()
    providers = {ids[u] for u in candidate['allocations'] if u in ids}
    held = {}
    if not wait:
        tree = ids.get(candidate['root_uuid']) if fresh_only else None
        taken = db_providers.lock_unless_taken(conn, providers, tree)
        if taken is None or (taken[1] is not None and
                             taken[1] > candidate['tree_used']):
            savepoint.rollback()
            return None
        held = taken[0]
    try:
        results, changes = writes.write_in(
            conn, context,
            [request._replace(allocations=candidate['allocations'])],
            NEW_TYPE, prelocked=writes.Prelocked(existing, held))
    except writes.BatchFailed as failed:
        savepoint.rollback()
        return failed.faults[request.index]
    savepoint.commit()
    return results[request.index], changes


def _placed(conn, request, candidate, answer, changes):
    answer = dict(answer, root_uuid=candidate['root_uuid'],
                  allocations=candidate['allocations'])
    if request.idempotency_key:
        # A repeat of the key answers where this claim placed.
        db_idempotency.amend(conn, request.idempotency_key, answer)
    return answer, changes
