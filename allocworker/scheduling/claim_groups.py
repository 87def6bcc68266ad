"""The candidates a claim's groups allow: the consumer's groups (and the
one it joins) locked with their members' roots, and each candidate
judged against their policies before any is tried (the rule itself is
``choosing.broken_group``, the one the allocation transaction judges
with)."""

from allocworker import codes
from allocworker.db import groups as db_groups
from allocworker.db import providers as db_providers
from allocworker.groups import affinity
from allocworker.scheduling import choosing


def keeping_policies(conn, request, candidates, ids, group_ids):
    """(the candidates whose roots keep every policy of the consumer's
    groups, those that bend only soft ones, the hard group that ruled out
    the first candidate dropped). ``ids``: {provider uuid: id};
    ``group_ids``: {consumer uuid: {group id}} the consumer's
    memberships, read in this transaction."""
    groups = _groups(conn, request, group_ids)
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


def _groups(conn, request, group_ids):
    """The consumer's groups and the one it joins, locked, with their
    members' roots."""
    ids = set(group_ids.get(request.consumer_uuid, ()))
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


def ruled_out(request, group, fitting):
    """The claim's Fault when ``group``'s policy left none of the
    ``fitting`` candidates."""
    return codes.Fault(
        codes.GROUP_POLICY_VIOLATION,
        'items[%d]: %d candidate(s) fit, but the %s policy of group %s%s '
        'rules out every one of them'
        % (request.index, fitting, group.policy, group.uuid,
           ' (max_per_root %d)' % group.max_per_root
           if group.max_per_root else ''))
