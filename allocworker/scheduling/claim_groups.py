"""The candidates a claim's groups allow: the consumer's groups (and the
one it joins) locked with their members' roots, and each candidate
judged against their rules before any is tried, by the judge the
allocation transaction judges with (``groups.judge``)."""

import collections

from allocworker import codes
from allocworker.db.catalog import providers as db_providers
from allocworker.db.catalog import resource_classes as db_classes
from allocworker.groups import judge as group_judge
from allocworker.groups import judgement
from allocworker.groups import rules as group_rules
from allocworker.scheduling import candidates

# The hard rule that ruled out a candidate: its group and verdict.
Blocking = collections.namedtuple('Blocking', ['judge', 'verdict'])


def keeping_policies(conn, request, candidates, ids, known, new_type,
                     order):
    """The window's ``candidates`` as a ``Weighed``, in the order the
    claim tries them. ``ids``: {provider uuid: id}; ``known``: the
    claim's transaction's ``writes.Prelocked``, its groups as
    ``prepared`` left them; ``order(candidates)``: the strategy's
    order."""
    judges = _judges_of(conn, request, known)
    if not judges:
        return Weighed(candidates, order, locked=known.groups)
    kind = _consumer_type(request, known, new_type)
    root_of = db_providers.roots_of(conn, set(ids.values()))
    class_ids = db_classes.ids_by_name(
        conn, {n for c in candidates for r in c['allocations'].values()
               for n in r})
    placed = {r for j in judges for p in j.members.values() for r in p.roots}
    judges[0].domains.prefetch(
        {r.scope for j in judges for r in j.rules},
        placed | {root_of[i] for i in ids.values()})
    spreads = _spread_counts(judges)

    def mover(candidate):
        roots = {root_of[ids[u]] for u in candidate['allocations']
                 if u in ids}
        classes = {class_ids[n] for r in candidate['allocations'].values()
                   for n in r if n in class_ids}
        return {request.consumer_uuid: (kind, roots, classes)}

    def verdicts(candidate):
        moving = mover(candidate)
        return [(j, v) for j in judges for v in j.verdicts(moving)]

    def crowding(candidate):
        return _crowding(spreads, mover(candidate)[request.consumer_uuid][1])

    return Weighed(candidates, order, verdicts, crowding, known.groups)


class Weighed(object):
    """A window's candidates in the order a claim tries them: those that
    keep every rule first, in tiers of how many members the spread
    rules' domains hold already (fewest first), each tier in the
    strategy's order; then those that bend only soft rules, in the
    strategy's order. A candidate is judged when the claim reaches it
    (most claims place the first they try), so a tier is ordered with
    the candidates a hard rule rules out still in it.

    ``blocking``: the first hard rule that ruled out a candidate reached,
    as a Blocking, or None; ``locked``: the groups to write with, as
    ``writes.Prelocked.groups``."""

    def __init__(self, candidates, order, verdicts=None, crowding=None,
                 locked=None):
        self.blocking, self.locked = None, locked
        self._candidates, self._order = candidates, order
        self._verdicts, self._crowding = verdicts, crowding

    def __iter__(self):
        if self._verdicts is None:
            yield from self._order(self._candidates)
            return
        tiers = collections.defaultdict(list)
        for candidate in self._candidates:
            tiers[self._crowding(candidate)].append(candidate)
        bending = []
        for tier in sorted(tiers):
            for candidate in self._order(tiers[tier]):
                verdicts = self._verdicts(candidate)
                hard = [(j, v) for j, v in verdicts
                        if v.rule.enforcement == group_rules.HARD]
                if hard:
                    self.blocking = self.blocking or Blocking(*hard[0])
                elif verdicts:
                    bending.append(candidate)
                else:
                    yield candidate
        # A soft rule never refuses, but is kept whenever a candidate can.
        yield from self._order(bending)


def locked(conn, group_ids, uuids=(), skip_locked=False):
    """The groups of ``group_ids`` and ``uuids`` locked (``skip_locked``:
    those no other transaction holds) with their members' roots, and
    the labels of those roots known to the transaction's Domains: a
    ``judgement.Locked`` (every root admitted), or None when there are
    none. A transaction of several claims locks every group they judge
    at once (``claims``); its claims judge what it read, kept up to date
    by the tries that write (``judgement.Judgement``)."""
    groups, members = judgement.locked_with_members(conn, group_ids, uuids,
                                                    skip_locked)
    if not groups:
        return None
    return judgement.Locked(groups, members, None,
                            {group_id: {} for group_id in groups})


def groups_asked(requests, known):
    """(ids of the groups the consumers of ``requests`` are members of,
    uuids of the groups they join): the groups that judge them."""
    member_of = {g for r in requests
                 for g in (known.group_ids or {}).get(r.consumer_uuid, ())}
    return member_of, {r.group_uuid for r in requests if r.group_uuid}


def covered(request, known):
    """Whether ``known.groups`` holds every group that judges the claim
    (none judging it, none needed; a group it joins that does not exist
    is one it cannot hold)."""
    ids, joined = groups_asked([request], known)
    if not ids and not joined:
        return True
    locked = known.groups.groups if known.groups else {}
    return ids <= set(locked) and joined <= {g.uuid for g in locked.values()}


def _claims_groups(request, known):
    """The ids of the groups of ``known.groups`` that judge the claim:
    its consumer's and the one it joins."""
    ids, joined = groups_asked([request], known)
    return {gid for gid, g in known.groups.groups.items()
            if gid in ids or g.uuid in joined}


def _judges_of(conn, request, known):
    """The Judges of the claim's groups, from ``known.groups`` as
    ``prepared`` left them (None: the claim judges no group)."""
    if known.groups is None:
        return []
    return _built(conn, known.groups, _claims_groups(request, known))


def _built(conn, locked, ids):
    """A Judge per group of ``ids`` in ``locked`` (``judgement.Locked``)."""
    domains = group_judge.Domains.of(conn)
    return [group_judge.Judge(locked.groups[gid],
                              judgement.rules_of(locked.groups[gid]),
                              locked.members[gid], domains, locked.within,
                              locked.bases[gid])
            for gid in sorted(ids)]


def prepared(conn, claim, known, new_type):
    """(``known`` with the claim's groups locked and read, the ids of the
    roots its groups' hard rules leave a new consumer when they can be
    listed (a few domains of a level), or None). The list is the exact
    set the judge would allow: ``_allowed``. Groups the transaction
    locked already (``known.groups``) are not read again."""
    request = claim.request
    if known.groups is None:
        known = known._replace(groups=_lock_claims(conn, request, known))
        if known.groups is None:
            return known, None
    judges = _judges_of(conn, request, known)
    if not judges:
        return known, None
    if any(r.policy == group_rules.SPREAD for j in judges for r in j.rules):
        # A spread rule's eligible domains are those the request admits.
        within = candidates.admitted(conn, claim.wanted)
        for judge in judges:
            judge.within = within
        known = known._replace(groups=known.groups._replace(within=within))
    if request.consumer_uuid in (known.consumers or {}):
        return known, None   # a resize: what it holds counts
    kind = _consumer_type(request, known, new_type)
    class_ids = set(db_classes.ids_by_name(conn, {
        n for g in claim.wanted.groups for n in g.resources}).values())
    roots = None
    for judge in judges:
        for index, rule in enumerate(judge.rules):
            labels = _allowed(judge, index, kind, class_ids)
            if labels is None:
                continue
            found = judge.domains.roots_of_labels(rule.scope, labels)
            if found is not None:
                roots = found if roots is None else roots & found
    # None left: the whole search finds the candidates the rules refuse.
    return known, roots or None


def _allowed(judge, index, kind, class_ids):
    """The labels of rule ``index``'s level where it lets a new member
    of type ``kind`` holding ``class_ids`` go, or None when it says
    nothing a list of domains can (soft, not counting the type, scope
    root, or a tenth of the domains or more allowed)."""
    rule = judge.rules[index]
    if rule.enforcement != group_rules.HARD or rule.scope == \
            group_rules.ROOT or (rule.consumer_types and
                                 kind not in rule.consumer_types):
        return None
    per_domain = judge.per_domain(index)
    every = judge.domains.all_labels(rule.scope)
    if rule.policy == group_rules.ANTI_AFFINITY:
        allowed = {d for d in every
                   if per_domain.get(d, 0) < rule.max_per_domain}
    elif rule.policy == group_rules.AFFINITY:
        if len(per_domain) < rule.max_domains:
            return None
        allowed = set(per_domain)
    else:
        held = set(per_domain)
        if 10 * (len(every) - len(every & held)) > len(every):
            # A domain without members is always allowed (max_skew >= 1):
            # a tenth or more are, whatever the rule's reach.
            return None
        reach = judge.reach(rule, class_ids, held, held)
        # A new member in d makes it per_domain[d] + 1; the minimum
        # after can only be higher where d was the one least held, and
        # then d is allowed anyway (max_skew >= 1).
        limit = group_rules.floor(rule, per_domain, reach) + rule.max_skew
        allowed = {d for d in every if per_domain.get(d, 0) + 1 <= limit}
    # A tenth of the domains or more allowed: a window or two meets
    # one, and listing their roots would cost more than it saves.
    return None if 10 * len(allowed) > len(every) else allowed


def missing_group(request, known):
    """The claim's Fault when the group it joins does not exist: it is
    not among the groups ``prepared`` locked."""
    locked = known.groups.groups.values() if known.groups else ()
    if request.group_uuid and request.group_uuid not in {
            g.uuid for g in locked}:
        return judgement.not_found(request.group_uuid,
                                   codes.GROUP_NOT_IN_BODY)
    return None


def _lock_claims(conn, request, known):
    """The ``locked`` groups of one claim: its consumer's and the one it
    joins; None when there are none."""
    ids, joined = groups_asked([request], known)
    if not ids and not joined:
        return None
    return locked(conn, ids, joined)


def _consumer_type(request, known, new_type):
    consumer = (known.consumers or {}).get(request.consumer_uuid)
    return request.consumer_type or (
        consumer.consumer_type if consumer else None) or new_type


def _spread_counts(judges):
    """[(judge, rule, {domain: members})] of every spread rule, over the
    members placed now."""
    return [(judge, rule, judge.per_domain(index))
            for judge in judges for index, rule in enumerate(judge.rules)
            if rule.policy == group_rules.SPREAD]


def _crowding(spreads, roots):
    """How many members the spread rules' domains of ``roots`` hold
    already, rule by rule (fewer is tried first)."""
    found = []
    for judge, rule, per_domain in spreads:
        labels = judge.domains.labels(rule.scope, roots)
        found.append(max((per_domain.get(labels[r], 0) for r in roots
                          if r in labels), default=0))
    return tuple(found)


def ruled_out(request, blocking, fitting):
    """The claim's Fault when a hard rule left none of the ``fitting``
    candidates."""
    verdict = blocking.verdict
    return codes.Fault(
        codes.GROUP_POLICY_VIOLATION,
        'items[%d]: %d candidate(s) fit, but %s of group %s rules out '
        'every one of them' % (request.index, fitting, group_rules.describe(
            verdict.index, verdict.rule), blocking.judge.group.uuid))
