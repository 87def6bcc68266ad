"""The rules of every group an allocation transaction touches, judged
inside it.

``Judgement`` is built after the consumer rows are locked and before the
providers are: it locks the groups (consumers, then groups, then
providers: one global order), so two members writing at once are judged
one after the other, on the state the first committed. Each group is
its own lock: writers into different groups meet only where they share
a transaction (``group_commit``). A claim's try is judged on the groups
its transaction locked and read before it (``Locked``), which it keeps
up to date for the claims after it (``keep``).
"""

import collections
import functools

from allocworker import codes
from allocworker.db import api as db
from allocworker.db.grouping import groups as db_groups
from allocworker.groups import judge as group_judge
from allocworker.groups import kept
from allocworker.groups import rules as group_rules


# Groups a claim locked and read before its try (``writes.Prelocked.
# groups``): {id: Group}, {id: {member uuid: Placed}}, the roots its
# request admits (None: every root), and {id: {rule index: counts}}
# of those members, shared by the judges that read them (``Judge``).
Locked = collections.namedtuple('Locked', ['groups', 'members', 'within',
                                           'bases'])


def not_found(uuid, code=codes.GROUP_NOT_FOUND):
    return codes.Fault(code, 'consumer group %s does not exist' % uuid)


def rules_of(group):
    """A stored group's rules (a tuple: judged many times over, parsed
    once per text)."""
    return _loaded(group.rules, group.policy, group.max_per_root)


@functools.lru_cache(maxsize=1024)
def _loaded(text, policy, max_per_root):
    return tuple(group_rules.loads(text, policy, max_per_root))


def levels_of(groups):
    """The levels whose labels judging ``groups``' rules reads."""
    return {rule.scope for group in groups
            for rule in rules_of(group)} - {group_rules.ROOT}


def locked_with_members(conn, group_ids, uuids=(), skip_locked=False):
    """({id: Group}, {id: {member uuid: Placed}}): the groups locked as
    ``db_groups.lock`` locks them, and their members as ``kept`` has or
    reads them (the transaction's Domains told their roots' labels)."""
    groups, epoch = db_groups.lock_in_epoch(conn, group_ids, uuids,
                                            skip_locked)
    return groups, kept.members_of(conn, groups, epoch,
                                   levels_of(groups.values()))


class Judgement(object):
    """The groups one allocation transaction touches, locked, and the
    verdict on each request."""

    def __init__(self, conn, requests, group_ids=None, locked=None):
        """``group_ids``: {consumer uuid: {group id}} of the requests'
        consumers, read already in this transaction (None: read here);
        ``locked``: a claim's ``Locked`` groups, used where they cover
        the requests' groups."""
        self.conn = conn
        joins = {r.consumer_uuid: r.group_uuid for r in requests
                 if r.group_uuid}
        self.faults = {}
        known = {g.uuid: gid
                 for gid, g in (locked.groups if locked else {}).items()}
        join_ids = {u: known[u] for u in set(joins.values()) if u in known}
        if len(join_ids) < len(set(joins.values())):
            join_ids = db_groups.ids_by_uuid(conn, set(joins.values()))
        for r in requests:
            if r.group_uuid and r.group_uuid not in join_ids:
                self.faults[r.index] = not_found(r.group_uuid,
                                                 codes.GROUP_NOT_IN_BODY)
        membership = group_ids if group_ids is not None else \
            db_groups.group_ids_of(conn, [r.consumer_uuid for r in requests])
        ids = {gid for gids in membership.values() for gid in gids}
        ids.update(join_ids.values())
        within, self._locked, self._kept = None, None, False
        self._judged, self._placements = [], {}
        # The requests whose changes to their groups are written.
        self._recorded = set()
        if locked and ids <= set(locked.groups):
            self.groups = {gid: locked.groups[gid] for gid in ids}
            self.members = {gid: dict(locked.members[gid]) for gid in ids}
            within, self._locked = locked.within, locked
        else:
            # All touched groups locked in one pass, in id order.
            self.groups, self.members = locked_with_members(conn, ids)
        self.joined = {uuid: self.groups[gid]
                       for uuid, gid in join_ids.items() if gid in self.groups}
        self.enrolled = {gid: set(self.members[gid]) for gid in self.groups}
        self.group_ids_of = {
            r.consumer_uuid: set(membership.get(r.consumer_uuid, ())) |
            ({self.joined[r.group_uuid].id}
             if r.group_uuid in self.joined else set())
            for r in requests}
        self.domains = group_judge.Domains.of(conn)
        bases = locked.bases if self._locked else {}
        self.judges = {
            gid: group_judge.Judge(group, rules_of(group),
                                   self.members[gid], self.domains, within,
                                   bases.get(gid))
            for gid, group in self.groups.items()}

    def judge(self, placements):
        """placements: [(request, consumer type, {root id}, {class id})]
        for the requests still live.

        Returns {index: Fault} for hard breaks and {index: [warning]} for
        soft ones."""
        faults, warnings = {}, {}
        self._judged = placements
        self._placements.update((p[0].index, p) for p in placements)
        for group_id, judge in sorted(self.judges.items()):
            movers, index_of = {}, {}
            for request, kind, roots, class_ids in placements:
                if group_id in self.group_ids_of[request.consumer_uuid]:
                    movers[request.consumer_uuid] = (kind, roots, class_ids)
                    index_of[request.consumer_uuid] = request.index
            if not movers:
                continue
            refused, warned = judge.refusals(movers)
            for uuid, fault in refused.items():
                faults.setdefault(index_of[uuid], fault)
            for uuid, warning in warned.items():
                warnings[index_of[uuid]] = warning
        return faults, warnings

    def concerns(self, request):
        """Whether any group judges ``request`` (else ``judge`` finds
        nothing to say about it and ``accept`` nothing to record)."""
        return bool(self.group_ids_of[request.consumer_uuid])

    def accept(self, request, kind, roots):
        """Take a judged request's placement as the state the next
        request of an independent batch is judged against."""
        for group_id in self._holding(request):
            self.members[group_id][request.consumer_uuid] = \
                db_groups.Placed(kind, set(roots))
            self.judges[group_id].forget()

    def _holding(self, request):
        """The ids of the locked groups whose members the request's
        write changes: those its consumer was a member of when they were
        read under their locks (not those it was removed from since its
        memberships were read), and the one it joins."""
        joined = self.joined.get(request.group_uuid)
        return {gid for gid in self.group_ids_of[request.consumer_uuid]
                if gid in self.groups and (
                    request.consumer_uuid in self.enrolled[gid] or
                    (joined is not None and joined.id == gid))}

    def joins(self, requests):
        """[(group_id, consumer_uuid)] memberships to add on commit."""
        result = []
        for r in requests:
            group = self.joined.get(r.group_uuid)
            if group and r.consumer_uuid not in self.enrolled[group.id]:
                result.append((group.id, r.consumer_uuid))
        return result

    def touched(self, requests):
        """{group id: {consumer uuid}}: the locked groups whose members
        ``requests`` change once written (their consumers' groups and
        those they join), unless written already."""
        found = collections.defaultdict(set)
        for r in requests:
            if r.index not in self._recorded:
                for gid in self._holding(r):
                    found[gid].add(r.consumer_uuid)
        return found

    def commit(self, requests):
        enroll(self.conn, [(self, requests)])

    def written(self, group_id, requests):
        """The members of a group as ``requests`` leave it once written
        (each placed as judged)."""
        if self._kept:
            return self._locked.members[group_id]
        members = self.members[group_id]
        for r in requests:
            placement = self._placements.get(r.index)
            if placement is not None and group_id in self._holding(r):
                members[r.consumer_uuid] = db_groups.Placed(
                    placement[1], set(placement[2]))
        self.judges[group_id].forget()
        return members

    def _current(self):
        """The groups as this judgement's writes find them: kept
        (``keep``) before it was written, a claim held back by
        ``staging`` enrolls at the generation the claims written before
        it left."""
        return self._locked.groups if self._kept else self.groups

    def keep(self):
        """A claim's try stays (written, or held back by ``staging``): the
        groups locked before it (``locked``) take its members and
        generations, for the claims after it in the transaction. (Until
        then a try's judgement is its own: a claim's release, judged
        and written in a savepoint, is rolled back.)"""
        if self._locked is None:
            return
        self._kept = True
        for request, kind, roots, _classes in self._judged:
            self.accept(request, kind, roots)
        for group_id, group in self.groups.items():
            self._locked.groups[group_id] = group
            members = self._locked.members[group_id]
            members.clear()
            members.update(self.members[group_id])
            self._locked.bases[group_id].clear()


def enroll(conn, judged):
    """Write what the requests of ``judged`` [(Judgement, requests
    written)] change in their groups, every group in one statement: the
    members they bring, each such group's generation moved on once, and
    for every group whose members they change a new members token and
    log, under which this worker keeps the members as written
    (``kept``)."""
    joining, current, holders, after, movers = \
        collections.defaultdict(list), {}, collections.defaultdict(list), \
        {}, collections.defaultdict(set)
    for judgement, requests in judged:
        groups = judgement._current()
        for group_id, uuid in judgement.joins(requests):
            joining[group_id].append(uuid)
            judgement.enrolled[group_id].add(uuid)
        for group_id, uuids in judgement.touched(requests).items():
            current[group_id] = groups[group_id]
            holders[group_id].append(groups)
            after[group_id] = judgement.written(group_id, requests)
            movers[group_id] |= uuids
        judgement._recorded.update(r.index for r in requests)
    if not current:
        return
    marks = {gid: kept.mark(group, {u: after[gid][u] for u in movers[gid]})
             for gid, group in current.items()}
    if not db_groups.enroll(conn, {
            gid: group.generation for gid, group in current.items()},
            joining, marks):
        raise db.ConcurrentUpdate(', '.join(
            sorted(g.uuid for g in current.values())))
    for group_id, group in current.items():
        token, log = marks[group_id]
        moved = group._replace(
            generation=group.generation + (1 if joining[group_id] else 0),
            members_token=token, members_log=log)
        for groups in holders[group_id]:
            groups[group_id] = moved
        kept.MEMBERS.put(group_id, token, after[group_id])
