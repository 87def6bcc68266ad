"""Rules for consumer groups: membership, and the judgement of a write
against the hard and soft policies of every group it touches.

``judge`` runs inside the allocation transaction after the group rows are
locked (consumers, then groups, then providers: one global order), so two
members allocating at once are judged one after the other.
"""

from oslo_db import exception as db_exc

from allocworker import codes
from allocworker.groups import affinity as group_policy
from allocworker import items
from allocworker import policy
from allocworker import retry
from allocworker import validation
from allocworker.conf import CONF
from allocworker.db import allocations as db_allocations
from allocworker.db import api as db
from allocworker.db import groups as db_groups
from allocworker.db import providers as db_providers


def group_item(group, members=None, **extra):
    item = {'uuid': group.uuid, 'name': group.name,
            'policy': group.policy, 'max_per_root': group.max_per_root,
            'members': sorted(members or ()),
            'generation': group.generation}
    item.update(extra)
    item['status'] = 200
    return item


def _not_found(uuid, code=codes.GROUP_NOT_FOUND):
    return codes.Fault(code, 'consumer group %s does not exist' % uuid)


# -- create, delete, read -------------------------------------------------

def create_group(context, uuid, name, policy, max_per_root=None,
                 project_id=None):
    if project_id is None:
        project_id = getattr(context, 'project_id', None)
    return items.one(context, {'uuid': items.echo(uuid)}, _create, context,
                     uuid, name, policy, max_per_root, project_id)


def _create(context, uuid, name, policy_name, max_per_root, project_id):
    uuid = validation.uuid(uuid, 'uuid')
    validation.string(name, 'name')
    if policy_name not in group_policy.POLICIES:
        raise validation.invalid('policy must be one of %s, not %r'
                                 % (', '.join(group_policy.POLICIES),
                                    policy_name))
    if policy_name in group_policy.ANTI:
        max_per_root = 1 if max_per_root is None else validation.integer(
            max_per_root, 'max_per_root', minimum=1)
    elif max_per_root is not None:
        raise validation.invalid('max_per_root applies to anti-affinity '
                                 'policies only, not %s' % policy_name)
    if project_id is not None:
        validation.string(project_id, 'project_id')
    policy.check(context, 'create_group', 'a group of project %s'
                 % project_id, project_id)
    retry.write(_insert, uuid, name, project_id, policy_name, max_per_root)
    return _read_one(uuid)


def _insert(uuid, name, project_id, policy, max_per_root):
    with db.writer() as conn:
        try:
            db_groups.create(conn, uuid, name, project_id, policy,
                             max_per_root)
        except db_exc.DBDuplicateEntry:
            raise codes.Fault(codes.GROUP_EXISTS,
                              'a consumer group with uuid %s already exists'
                              % uuid)


def _read_one(uuid):
    with db.reader() as conn:
        (group, members), = db_groups.describe(conn, [uuid])
    return group_item(group, members)


def delete_group(context, uuid):
    return items.one(context, {'uuid': items.echo(uuid)}, _delete, context,
                     uuid)


def _delete(context, uuid):
    uuid = validation.uuid(uuid, 'uuid')
    retry.write(_remove_group, context, uuid)
    return {'uuid': uuid, 'status': 200}


def _remove_group(context, uuid):
    with db.writer() as conn:
        group = db_groups.lock_by_uuid(conn, [uuid]).get(uuid)
        if group is None:
            raise _not_found(uuid)
        policy.check(context, 'delete_group', 'group %s' % uuid,
                     group.project_id)
        db_groups.delete(conn, group)


def get_groups(context, uuids=None, project_id=None):
    """Groups with members and ``roots``; 404 items for unknown uuids."""
    if uuids is not None:
        validation.uuid_list(uuids, 'uuids', CONF.worker.max_batch_items)
    wanted = None if uuids is None else items.each_uuid(uuids, 'uuids')
    with db.reader() as conn:
        found = db_groups.describe(
            conn, None if wanted is None else items.valid(wanted),
            project_id=project_id)
    described = {g.uuid: _described(g, members) if policy.allowed(
        context, 'get_groups', g.project_id) else policy.denied(
        context, 'get_groups', 'group %s' % g.uuid).item(uuid=g.uuid)
        for g, members in found}
    if wanted is None:
        return [i for i in described.values() if i['status'] == 200]
    return [w.item(uuid=items.echo(raw)) if isinstance(w, codes.Fault)
            else described.get(w) or _not_found(w).item(uuid=w)
            for raw, w in zip(uuids, wanted)]


def _described(group, members):
    roots = {}
    for member, member_roots in sorted(members.items()):
        for root in member_roots:
            roots.setdefault(root, []).append(member)
    return group_item(group, members, roots=roots)


# -- membership ------------------------------------------------------------

def add_members(context, group_uuid, consumer_uuids):
    return _change_members(context, group_uuid, consumer_uuids, adding=True)


def remove_members(context, group_uuid, consumer_uuids):
    return _change_members(context, group_uuid, consumer_uuids,
                           adding=False)


def _change_members(context, group_uuid, consumer_uuids, adding):
    group_uuid = validation.uuid(group_uuid, 'group_uuid')
    validation.uuid_list(consumer_uuids, 'consumer_uuids',
                         CONF.worker.max_batch_items)
    parsed = items.each_uuid(consumer_uuids, 'consumer_uuids')
    outcome = retry.write(_write_members, context, group_uuid,
                          items.valid(parsed), adding)
    answers = []
    for raw, uuid in zip(consumer_uuids, parsed):
        if isinstance(uuid, codes.Fault):
            answers.append(uuid.item(consumer_uuid=items.echo(raw)))
            continue
        result = outcome.get(uuid, [])
        if isinstance(result, codes.Fault):
            answers.append(result.item(consumer_uuid=uuid))
        else:
            item = {'consumer_uuid': uuid, 'status': 200}
            if result:
                item['warnings'] = result
            answers.append(item)
    return answers


def _write_members(context, group_uuid, uuids, adding):
    """{consumer_uuid: [warnings] | Fault}; a missing group fails whole."""
    call = 'add_members' if adding else 'remove_members'
    with db.writer() as conn:
        group = db_groups.lock_by_uuid(conn, [group_uuid]).get(group_uuid)
        if group is None:
            raise _not_found(group_uuid)
        if not policy.allowed(context, call, group.project_id):
            fault = policy.denied(context, call, 'group %s' % group_uuid)
            return {uuid: fault for uuid in uuids}
        members = db_groups.member_roots(conn, [group.id])[group.id]
        outcome, changed = {}, []
        for uuid in dict.fromkeys(uuids):
            if adding == (uuid in members):
                outcome[uuid] = []  # already so: nothing to do
                continue
            if not adding:
                del members[uuid]
                changed.append(uuid)
                outcome[uuid] = []
                continue
            roots = _current_roots(conn, uuid)
            after = dict(members, **{uuid: roots})
            verdict = _verdict(group, members, after, {uuid})
            if uuid in verdict and group.policy in group_policy.HARD:
                outcome[uuid] = verdict[uuid]
                continue
            members[uuid] = roots
            changed.append(uuid)
            outcome[uuid] = verdict.get(uuid, [])
        if changed:
            (db_groups.add_members if adding else db_groups.remove_members)(
                conn, group.id, changed)
            if not db_groups.bump_generation(conn, group.id,
                                             group.generation):
                raise db.ConcurrentUpdate(group_uuid)
        return outcome


def _current_roots(conn, consumer_uuid):
    found = db_allocations.describe(conn, [consumer_uuid])
    if consumer_uuid not in found:
        return set()
    _consumer, allocations = found[consumer_uuid]
    ids = db_providers.ids_by_uuid(conn, list(allocations))
    return set(db_providers.roots_of(conn, set(ids.values())).values())


def _verdict(group, before, after, movers):
    """{mover: Fault (hard) or [warning] (soft)} for breaking movers."""
    broken = group_policy.breakers(group.policy, group.max_per_root,
                                   before, after, movers)
    if group.policy in group_policy.HARD:
        return {m: codes.Fault(
            codes.GROUP_POLICY_VIOLATION,
            'consumer %s would break the %s policy of group %s%s'
            % (m, group.policy, group.uuid,
               ' (max_per_root %d)' % group.max_per_root
               if group.max_per_root else '')) for m in broken}
    return {m: [group_policy.SOFT_WARNING] for m in broken}


# -- inside the allocation transaction ------------------------------------

class Judgement(object):
    """The groups one allocation transaction touches, locked, and the
    verdict on each request. Build it after the consumers are locked and
    before the providers are."""

    def __init__(self, conn, requests, group_ids=None):
        """``group_ids``: {consumer uuid: {group id}} of the requests'
        consumers, read already in this transaction (None: read here)."""
        self.conn = conn
        joins = {r.consumer_uuid: r.group_uuid for r in requests
                 if r.group_uuid}
        self.faults = {}
        join_ids = db_groups.ids_by_uuid(conn, set(joins.values()))
        for r in requests:
            if r.group_uuid and r.group_uuid not in join_ids:
                self.faults[r.index] = _not_found(r.group_uuid,
                                                  codes.GROUP_NOT_IN_BODY)
        membership = group_ids if group_ids is not None else \
            db_groups.group_ids_of(conn, [r.consumer_uuid for r in requests])
        ids = {gid for gids in membership.values() for gid in gids}
        ids.update(join_ids.values())
        # All touched groups locked in one pass, in id order.
        self.groups = db_groups.lock(conn, ids)
        self.joined = {uuid: self.groups[gid]
                       for uuid, gid in join_ids.items() if gid in self.groups}
        self.members = db_groups.member_roots(conn, ids)
        self.enrolled = {gid: set(self.members[gid]) for gid in ids}
        self.group_ids_of = {
            r.consumer_uuid: set(membership.get(r.consumer_uuid, ())) |
            ({self.joined[r.group_uuid].id}
             if r.group_uuid in self.joined else set())
            for r in requests}

    def judge(self, new_roots):
        """new_roots: [(request, {root_id})] for the requests still live.

        Returns {index: Fault} for hard breaks and {index: [warning]} for
        soft ones."""
        faults, warnings = {}, {}
        for group_id, group in self.groups.items():
            before = {m: roots for m, roots in self.members[group_id].items()
                      if roots}
            after = dict(before)
            movers = {}
            for request, roots in new_roots:
                if group_id in self.group_ids_of[request.consumer_uuid]:
                    movers[request.consumer_uuid] = request
                    if roots:
                        after[request.consumer_uuid] = roots
                    else:
                        after.pop(request.consumer_uuid, None)
            if not movers:
                continue
            verdict = _verdict(group, before, after, set(movers))
            for uuid, outcome in verdict.items():
                index = movers[uuid].index
                if isinstance(outcome, codes.Fault):
                    faults.setdefault(index, outcome)
                else:
                    warnings[index] = outcome
        return faults, warnings

    def concerns(self, request):
        """Whether any group judges ``request`` (else ``judge`` finds
        nothing to say about it and ``accept`` nothing to record)."""
        return bool(self.group_ids_of[request.consumer_uuid])

    def accept(self, request, roots):
        """Take a judged request's placement as the state the next
        request of an independent batch is judged against."""
        for group_id in self.group_ids_of[request.consumer_uuid]:
            self.members[group_id][request.consumer_uuid] = set(roots)

    def joins(self, requests):
        """[(group_id, consumer_uuid)] memberships to add on commit."""
        result = []
        for r in requests:
            group = self.joined.get(r.group_uuid)
            if group and r.consumer_uuid not in self.enrolled[group.id]:
                result.append((group.id, r.consumer_uuid))
        return result

    def commit(self, requests):
        joins = self.joins(requests)
        for group_id, uuid in joins:
            db_groups.add_members(self.conn, group_id, [uuid])
        for group_id in sorted({g for g, _ in joins}):
            group = self.groups[group_id]
            if not db_groups.bump_generation(self.conn, group_id,
                                             group.generation):
                raise db.ConcurrentUpdate(group.uuid)


def broken_policies():
    """Hard groups whose members' current placement breaks the policy."""
    with db.reader() as conn:
        found = db_groups.describe(conn)
    broken = []
    for group, members in found:
        if group.policy not in group_policy.HARD:
            continue
        placed = {m: roots for m, roots in members.items() if roots}
        # Judged as if every member had just arrived.
        if group_policy.breakers(group.policy, group.max_per_root, {},
                                 placed, set(placed)):
            broken.append({'group_uuid': group.uuid, 'policy': group.policy,
                           'max_per_root': group.max_per_root,
                           'roots': _described(group, members)['roots']})
    return broken
