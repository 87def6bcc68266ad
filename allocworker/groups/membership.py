"""Consumer groups: creating and deleting them, their rules
(``update_group``) and their members. Every judgement of a rule goes
through ``groups.judge``; the allocation transaction's is in
``groups.judgement``.
"""

from oslo_db import exception as db_exc

from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db.grouping import groups as db_groups
from allocworker.db.grouping import topology as db_topology
from allocworker.db.ledger import allocations as db_allocations
from allocworker.groups import judge as group_judge
from allocworker.groups import judgement
from allocworker.groups import rules as group_rules
from allocworker import items
from allocworker import notifications
from allocworker import policy
from allocworker import retry
from allocworker import validation


def group_item(group, members=None, rules=None, **extra):
    """A group as create_group answers; ``rules`` adds them (RPC 1.5)."""
    item = {'uuid': group.uuid, 'name': group.name,
            'policy': group.policy, 'max_per_root': group.max_per_root,
            'members': sorted(members or ()),
            'generation': group.generation}
    if rules is not None:
        item['rules'] = [group_rules.shown(r) for r in rules]
    item.update(extra)
    item['status'] = 200
    return item


_not_found = judgement.not_found


# -- create, update, delete ---------------------------------------------------

def create_group(context, uuid, name, policy=None, max_per_root=None,
                 project_id=None, rules=None):
    if project_id is None:
        project_id = getattr(context, 'project_id', None)
    return items.one(context, {'uuid': items.echo(uuid)}, _create, context,
                     uuid, name, policy, max_per_root, project_id, rules)


def _create(context, uuid, name, policy_name, max_per_root, project_id,
            raw_rules):
    uuid = validation.uuid(uuid, 'uuid')
    validation.string(name, 'name')
    if raw_rules is None:
        stored, rules = None, [_policy_rule(policy_name, max_per_root)]
        max_per_root = rules[0].max_per_domain
    elif policy_name is not None or max_per_root is not None:
        raise validation.invalid('give either policy (and max_per_root) '
                                 'or rules, not both')
    else:
        rules = group_rules.parse(raw_rules)
        stored = group_rules.dumps(rules)
        policy_name, max_per_root = group_rules.as_policy(rules)
    if project_id is not None:
        validation.string(project_id, 'project_id')
    policy.check(context, 'create_group', 'a group of project %s'
                 % project_id, project_id)
    retry.write(_insert, uuid, name, project_id, policy_name, max_per_root,
                stored, rules)
    item = _read_one(uuid, with_rules=raw_rules is not None)
    _notify(context, 'created', item, rules)
    return item


def _notify(context, change, item, rules=None):
    """``group.changed`` for a group as ``item`` shows it (None:
    deleted, ``item`` then its uuid)."""
    if item is None:
        return
    shown = item.get('rules')
    if shown is None:
        shown = [group_rules.shown(r) for r in rules or ()]
    payload = {'uuid': item['uuid'], 'generation': item.get('generation'),
               'change': change, 'members': len(item.get('members', ())),
               'rules': shown}
    notifications.emit(context, notifications.GROUP_CHANGED, [payload])


def _policy_rule(policy_name, max_per_root):
    """The one rule of a 1.0 ``policy``."""
    if policy_name not in group_rules.POLICIES:
        raise validation.invalid('policy must be one of %s, not %r'
                                 % (', '.join(group_rules.POLICIES),
                                    policy_name))
    if policy_name in group_rules.ANTI_POLICIES:
        max_per_root = 1 if max_per_root is None else validation.integer(
            max_per_root, 'max_per_root', minimum=1)
    elif max_per_root is not None:
        raise validation.invalid('max_per_root applies to anti-affinity '
                                 'policies only, not %s' % policy_name)
    return group_rules.from_policy(policy_name, max_per_root)


def _insert(uuid, name, project_id, policy_name, max_per_root, stored,
            rules):
    with db.writer() as conn:
        _check_levels(conn, rules)
        try:
            db_groups.create(conn, uuid, name, project_id, policy_name,
                             max_per_root, stored)
        except db_exc.DBDuplicateEntry:
            raise codes.Fault(codes.GROUP_EXISTS,
                              'a consumer group with uuid %s already exists'
                              % uuid)


def _check_levels(conn, rules):
    """400 topology.not_found for a rule naming a level that does not
    exist (``root`` and ``partition`` are built in)."""
    named = {r.scope for r in rules} - set(group_rules.RESERVED_LEVELS)
    known = {level.name for level in db_topology.levels(conn, named)}
    for index, rule in enumerate(rules):
        if rule.scope in named - known:
            raise codes.Fault(codes.TOPOLOGY_NOT_IN_BODY,
                              'rules[%d].scope: no topology level %s'
                              % (index, rule.scope))


def _read_one(uuid, with_rules=True):
    with db.snapshot() as conn:
        (group, members), = db_groups.describe(conn, [uuid])
    rules = judgement.rules_of(group) if with_rules else None
    return group_item(group, members, rules)


def update_group(context, uuid, generation, rules, force=False):
    """Replace a group's rules under its generation."""
    return items.one(context, {'uuid': items.echo(uuid)}, _update, context,
                     uuid, generation, rules, force)


def _update(context, uuid, generation, raw_rules, force):
    uuid = validation.uuid(uuid, 'uuid')
    validation.integer(generation, 'generation', minimum=0, maximum=None)
    validation.boolean(force, 'force')
    rules = group_rules.parse(raw_rules)
    retry.write(_replace_rules, context, uuid, generation, rules, force)
    item = _read_one(uuid)
    _notify(context, 'rules', item, rules)
    return item


def _locked(conn, context, uuid, call):
    """The group, locked, once ``call``'s policy allows it; 404 when it
    does not exist."""
    group = db_groups.lock_by_uuid(conn, [uuid]).get(uuid)
    if group is None:
        raise _not_found(uuid)
    policy.check(context, call, 'group %s' % uuid, group.project_id)
    return group


def _replace_rules(context, uuid, generation, rules, force):
    with db.writer() as conn:
        group = _locked(conn, context, uuid, 'update_group')
        if group.generation != generation:
            raise codes.Fault(
                codes.GROUP_GENERATION_CONFLICT,
                'group %s is at generation %d, not %d'
                % (uuid, group.generation, generation),
                generation=group.generation)
        _check_levels(conn, rules)
        if not force:
            _refuse_broken(conn, group, rules)
        policy_name, max_per_root = group_rules.as_policy(rules)
        db_groups.set_rules(conn, group, policy_name, max_per_root,
                            group_rules.dumps(rules))


def _refuse_broken(conn, group, rules):
    """409 when members' current allocations break a new hard rule."""
    members = db_groups.member_roots(conn, [group.id])[group.id]
    placed = {m: p for m, p in members.items() if p.roots}
    judge = group_judge.Judge(group, rules, {}, group_judge.Domains(conn))
    # Judged as if every member arrived now, each with what it holds.
    classes = db_groups.classes_of(conn, list(placed))
    verdicts = [v for v in judge.verdicts(
        {m: (p.consumer_type, p.roots, classes.get(m, set()))
         for m, p in placed.items()})
        if v.rule.enforcement == group_rules.HARD]
    if verdicts:
        raise judge.fault(verdicts[0])


def delete_group(context, uuid):
    return items.one(context, {'uuid': items.echo(uuid)}, _delete, context,
                     uuid)


def _delete(context, uuid):
    uuid = validation.uuid(uuid, 'uuid')
    retry.write(_remove_group, context, uuid)
    _notify(context, 'deleted', {'uuid': uuid, 'generation': None})
    return {'uuid': uuid, 'status': 200}


def _remove_group(context, uuid):
    with db.writer() as conn:
        db_groups.delete(conn, _locked(conn, context, uuid, 'delete_group'))


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
    outcome, changed = retry.write(_write_members, context, group_uuid,
                                   items.valid(parsed), adding)
    if changed and notifications.enabled():
        item = _read_one(group_uuid)
        _notify(context, 'members', item)
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
    """({consumer_uuid: [warnings] | Fault}, whether any member changed);
    a missing group fails whole."""
    call = 'add_members' if adding else 'remove_members'
    with db.writer() as conn:
        # The consumers first (the global lock order): a write of one
        # of them, which read its memberships before this commits, has
        # committed before this reads what it holds.
        db_allocations.lock_consumers(conn, uuids)
        group = db_groups.lock_by_uuid(conn, [group_uuid]).get(group_uuid)
        if group is None:
            raise _not_found(group_uuid)
        if not policy.allowed(context, call, group.project_id):
            fault = policy.denied(context, call, 'group %s' % group_uuid)
            return {uuid: fault for uuid in uuids}, False
        members = db_groups.member_roots(conn, [group.id])[group.id]
        judge = group_judge.Judge(group, judgement.rules_of(group), members,
                                  group_judge.Domains(conn))
        outcome, changed = {}, []
        for uuid in dict.fromkeys(uuids):
            if adding == (uuid in members):
                outcome[uuid] = []  # already so: nothing to do
                continue
            if not adding:
                del members[uuid]
                judge.forget()
                changed.append(uuid)
                outcome[uuid] = []
                continue
            mover = db_groups.placement_of(conn, uuid)
            refused, warned = judge.refusals({uuid: mover})
            if uuid in refused:
                outcome[uuid] = refused[uuid]
                continue
            members[uuid] = db_groups.Placed(mover[0], mover[1])
            judge.forget()
            changed.append(uuid)
            outcome[uuid] = warned.get(uuid, [])
        if changed:
            (db_groups.add_members if adding else db_groups.remove_members)(
                conn, group.id, changed)
            if not db_groups.bump_generation(conn, group.id,
                                             group.generation):
                raise db.ConcurrentUpdate(group_uuid)
        return outcome, bool(changed)
