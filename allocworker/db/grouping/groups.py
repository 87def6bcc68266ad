"""Queries on consumer groups and their members."""

import collections
import functools

from oslo_utils import timeutils
import sqlalchemy as sa

from allocworker.db import api
from allocworker.db import generations
from allocworker.db.grouping import epoch as db_epoch
from allocworker.db.grouping import topology as db_topology
from allocworker.db import prepared
from allocworker.db import schema
from allocworker import partitions

_g = schema.consumer_groups
_m = schema.group_members
_c = schema.consumers
_a = schema.allocations
_p = schema.providers

Group = collections.namedtuple(
    'Group', ['id', 'uuid', 'name', 'project_id', 'policy', 'max_per_root',
              'generation', 'rules', 'members_token', 'members_log'])
_COLUMNS = [_g.c.id, _g.c.uuid, _g.c.name, _g.c.project_id, _g.c.policy,
            _g.c.max_per_root, _g.c.generation, _g.c.rules,
            _g.c.members_token, _g.c.members_log]
# A member as the rules judge it: its consumer type (None while it holds
# nothing) and the ids of the roots it holds allocations under.
Placed = collections.namedtuple('Placed', ['consumer_type', 'roots'])
# A member as get_groups shows it: also {root id: root uuid} and the
# classes it holds.
Held = collections.namedtuple('Held', ['consumer_type', 'roots',
                                       'class_ids'])


def create(conn, uuid, name, project_id, policy, max_per_root, rules):
    """``rules``: the rules as stored (text), or None for the one rule
    ``policy`` says."""
    generation = generations.first(conn, generations.GROUP, [uuid])[uuid]
    conn.execute(sa.insert(_g).values(
        uuid=uuid, name=name, project_id=project_id, policy=policy,
        max_per_root=max_per_root, generation=generation, rules=rules,
        created_at=timeutils.utcnow()))


def set_rules(conn, group, policy, max_per_root, rules):
    """Replace a locked group's rules and move its generation."""
    conn.execute(sa.update(_g).where(_g.c.id == group.id).values(
        policy=policy, max_per_root=max_per_root, rules=rules,
        generation=group.generation + 1, updated_at=timeutils.utcnow()))
    return group.generation + 1


def delete(conn, group):
    conn.execute(sa.delete(_m).where(_m.c.group_id == group.id))
    conn.execute(sa.delete(_g).where(_g.c.id == group.id))
    generations.retire(conn, generations.GROUP,
                       {group.uuid: group.generation})


def ids_by_uuid(conn, uuids):
    """{uuid: id} of the groups that exist (no lock)."""
    if not uuids:
        return {}
    rows = conn.execute(sa.select(_g.c.uuid, _g.c.id)
                        .where(_g.c.uuid.in_(sorted(set(uuids)))))
    return dict(rows.all())


def lock_by_uuid(conn, uuids):
    """Lock the groups that exist, in id order; {uuid: Group}."""
    if not uuids:
        return {}
    rows = conn.execute(api.for_update(
        sa.select(*_COLUMNS).where(_g.c.uuid.in_(sorted(set(uuids))))
        .order_by(_g.c.id)))
    return {row.uuid: Group(*row) for row in rows}


def lock(conn, group_ids, uuids=(), skip_locked=False):
    """Lock groups by id, and those of ``uuids`` that exist, in id
    order; {id: Group}. ``skip_locked``: only those no other transaction
    holds, never waiting."""
    return lock_in_epoch(conn, group_ids, uuids, skip_locked)[0]


def lock_in_epoch(conn, group_ids, uuids=(), skip_locked=False):
    """``lock``'s groups, and the topology's epoch read with them (None
    when no group was locked)."""
    if not group_ids and not uuids:
        return {}, None
    rows = _lock_query(conn.dialect.name, skip_locked).execute(conn, {
        'ids': sorted(group_ids) or [0],
        'uuids': sorted(uuids) or ['']}).all()
    return ({row[0]: Group(*row[:-1]) for row in rows},
            rows[0][-1] if rows else None)


@functools.lru_cache(maxsize=8)
def _lock_query(dialect, skip_locked):
    """Prepared on PostgreSQL (every claim into a group runs it)."""
    query = sa.select(*_COLUMNS, db_epoch.column()).where(sa.or_(
        prepared.any_of(_g.c.id, 'ids', sa.Integer, dialect),
        prepared.any_of(_g.c.uuid, 'uuids', sa.String, dialect)))
    if dialect != 'sqlite':
        query = query.with_for_update(skip_locked=skip_locked)
    return prepared.Core(query.order_by(_g.c.id))


_GROUP_IDS_OF = sa.select(_m.c.consumer_uuid, _m.c.group_id).where(
    _m.c.consumer_uuid.in_(sa.bindparam('uuids', expanding=True)))


def group_ids_of(conn, consumer_uuids):
    """{consumer_uuid: {group_id}} for consumers that are members."""
    if not consumer_uuids:
        return {}
    rows = conn.execute(_GROUP_IDS_OF, {'uuids': sorted(set(consumer_uuids))})
    found = collections.defaultdict(set)
    for uuid, group_id in rows:
        found[uuid].add(group_id)
    return found


def member_roots(conn, group_ids):
    """{group_id: {member_uuid: Placed}}; members without allocations
    hold no roots."""
    if not group_ids:
        return {}
    found = collections.defaultdict(dict)
    rows = _member_roots(conn.dialect.name).execute(
        conn, {'groups': sorted(group_ids)})
    for group_id, uuid, consumer_type, root_id in rows:
        member = found[group_id].setdefault(uuid, Placed(consumer_type,
                                                         set()))
        if root_id is not None:
            member.roots.add(root_id)
    return found


@functools.lru_cache(maxsize=32)
def _member_roots(dialect, levels=()):
    """Each member's consumer and its allocations' roots, distinct, and
    each root's label at ``levels``. On PostgreSQL looked up member by
    member (fenced laterals, each root by a scalar subquery): the
    statement runs prepared, and its generic plan joined plainly hashed
    every allocation and provider (3 ms for a group of 50 members at
    10,000 allocations)."""
    if dialect != 'postgresql':
        groups = prepared.in_list(_m.c.group_id, 'groups', sa.Integer,
                                  dialect)
        # A member's allocations of several classes under one root are
        # one row: the rules count roots, not classes.
        return prepared.Core(
            sa.select(_m.c.group_id, _m.c.consumer_uuid, _c.c.consumer_type,
                      _p.c.root_provider_id).distinct()
            .select_from(_m)
            .outerjoin(_c, _c.c.uuid == _m.c.consumer_uuid)
            .outerjoin(_a, _a.c.consumer_id == _c.c.id)
            .outerjoin(_p, _p.c.id == _a.c.provider_id)
            .where(groups))
    # The members read from their group's index (as an unnested list,
    # the generic plan hashed the groups and scanned every member).
    groups = prepared.any_of(_m.c.group_id, 'groups', sa.Integer, dialect)
    consumer = (sa.select(_c.c.id, _c.c.consumer_type)
                .where(_c.c.uuid == _m.c.consumer_uuid).offset(0)
                .lateral('consumer'))
    root = (sa.select(_p.c.root_provider_id)
            .where(_p.c.id == _a.c.provider_id).scalar_subquery())
    held = (sa.select(root.label('root_provider_id')).distinct()
            .where(_a.c.consumer_id == consumer.c.id).offset(0)
            .lateral('held'))
    read = []
    if any(n != partitions.LEVEL for n in levels):
        read.append(db_topology.aggregates_column(held.c.root_provider_id))
    if partitions.LEVEL in levels:
        read.extend(db_topology.label_columns(held.c.root_provider_id,
                                              (partitions.LEVEL,)))
    return prepared.Core(
        sa.select(_m.c.group_id, _m.c.consumer_uuid, consumer.c.consumer_type,
                  held.c.root_provider_id, *read)
        .select_from(_m.outerjoin(consumer, sa.true())
                     .outerjoin(held, sa.true()))
        .where(groups))


def member_roots_labelled(conn, group_ids, levels):
    """(``member_roots``, {level: {root id: label}} of the members' roots
    at each of ``levels``, as ``db_topology.labels_of_roots`` gives
    them, {level: {label}} of every domain of the levels whose domains
    it read on the way: none but on PostgreSQL, level partition aside).
    On PostgreSQL in two statements: the levels' domains, then the
    members with each root's aggregates (at level partition, its
    partition), mapped to labels here."""
    levels = tuple(sorted(levels))
    if conn.dialect.name != 'postgresql' or not levels or not group_ids:
        members = member_roots(conn, group_ids)
        roots = {r for m in members.values() for p in m.values()
                 for r in p.roots}
        return members, db_topology.labels_of_roots(conn, levels, roots), {}
    aggregated = tuple(n for n in levels if n != partitions.LEVEL)
    domains = db_topology.domains_of(conn, aggregated)
    found = collections.defaultdict(dict)
    labels = {level: {} for level in levels}
    rows = _member_roots(conn.dialect.name, levels).execute(
        conn, {'groups': sorted(group_ids)})
    for group_id, uuid, consumer_type, root_id, *read in rows:
        member = found[group_id].get(uuid)
        if member is None:
            member = found[group_id][uuid] = Placed(consumer_type, set())
        if root_id is None:
            continue
        member.roots.add(root_id)
        for level in aggregated:
            db_topology.keep(labels, level, root_id,
                             db_topology.label_in(domains[level], read[0]))
        if partitions.LEVEL in levels:
            db_topology.keep(labels, partitions.LEVEL, root_id, read[-1])
    return found, labels, {level: set(d.values())
                           for level, d in domains.items()}


def add_members(conn, group_id, consumer_uuids):
    if consumer_uuids:
        now = timeutils.utcnow()
        conn.execute(sa.insert(_m), [
            {'group_id': group_id, 'consumer_uuid': u, 'created_at': now}
            for u in consumer_uuids])


def remove_members(conn, group_id, consumer_uuids):
    if consumer_uuids:
        conn.execute(sa.delete(_m).where(
            _m.c.group_id == group_id,
            _m.c.consumer_uuid.in_(sorted(consumer_uuids))))


def enroll(conn, expected, joining, marks):
    """Give each group of ``expected`` ({group id: generation}) its new
    members token and log (``marks``: {group id: (token, log)}), and
    those of ``joining`` ({group id: [consumer uuid]}) their new members
    and a generation moved on by one; False when any group's generation
    was no longer the expected one (the caller rolls back). One prepared
    statement on PostgreSQL, whatever the groups: every write of a
    member runs it."""
    ids = sorted(expected)
    if not prepared.applies(conn.dialect):
        for group_id in ids:
            add_members(conn, group_id, joining.get(group_id))
        return all([_moved_on(conn, group_id, expected[group_id],
                              1 if joining.get(group_id) else 0,
                              *marks[group_id]) for group_id in ids])
    rows = [(group_id, uuid) for group_id in ids
            for uuid in joining.get(group_id, ())]
    moved = _ENROLL_PG.execute(conn, {
        'm_group': [g for g, _u in rows], 'm_uuid': [u for _g, u in rows],
        'now': timeutils.utcnow(), 'g_id': ids,
        'g_generation': [expected[g] for g in ids],
        'g_step': [1 if joining.get(g) else 0 for g in ids],
        'g_token': [marks[g][0] for g in ids],
        'g_log': [marks[g][1] for g in ids]}).scalar()
    return moved == len(ids)


_ENROLL_PG = prepared.Statement('allocworker_enroll', """
WITH added AS (
    INSERT INTO group_members (group_id, consumer_uuid, created_at)
    SELECT m.group_id, m.consumer_uuid, %(now)s::timestamp
    FROM unnest(%(m_group)s::int[], %(m_uuid)s::varchar[])
         AS m(group_id, consumer_uuid)
    RETURNING 1),
moved AS (
    UPDATE consumer_groups AS g
    SET generation = g.generation + e.step, members_token = e.token,
        members_log = e.log,
        updated_at = CASE WHEN e.step > 0 THEN %(now)s::timestamp
                          ELSE g.updated_at END
    FROM unnest(%(g_id)s::int[], %(g_generation)s::bigint[],
                %(g_step)s::int[], %(g_token)s::bigint[], %(g_log)s::text[])
         AS e(id, generation, step, token, log)
    WHERE g.id = ANY(%(g_id)s::int[])
      AND g.id = e.id AND g.generation = e.generation
    RETURNING 1)
SELECT count(*) FROM moved""")


def bump_generation(conn, group_id, expected):
    """Move a group's generation on from ``expected`` (its members
    changed, and are kept under no token): False when it was no longer
    that."""
    return _moved_on(conn, group_id, expected, 1, None, None)


def _moved_on(conn, group_id, expected, step, token, log):
    values = {'generation': _g.c.generation + step, 'members_token': token,
              'members_log': log}
    if step:
        values['updated_at'] = timeutils.utcnow()
    result = conn.execute(
        sa.update(_g).where(_g.c.id == group_id,
                            _g.c.generation == expected).values(**values))
    return result.rowcount == 1


def forget_members(conn):
    """Clear every group's members token: the transaction changed what
    members hold outside the allocation transaction (an import pass)."""
    conn.execute(sa.update(_g).where(_g.c.members_token.isnot(None))
                 .values(members_token=None, members_log=None))


def describe(conn, uuids=None, project_id=None):
    """[(Group, {member_uuid: Held})]: the groups, then their members'
    allocations (two statements; run them in one snapshot)."""
    query = sa.select(*_COLUMNS).order_by(_g.c.name, _g.c.uuid)
    if uuids is not None:
        if not uuids:
            return []
        query = query.where(_g.c.uuid.in_(sorted(set(uuids))))
    if project_id is not None:
        query = query.where(_g.c.project_id == project_id)
    groups = [Group(*row) for row in conn.execute(query)]
    members = _held(conn, [g.id for g in groups])
    return [(g, members.get(g.id, {})) for g in groups]


def _held(conn, group_ids):
    """{group id: {member uuid: Held}}."""
    found = collections.defaultdict(dict)
    if not group_ids:
        return found
    root = _p.alias('root')
    query = (sa.select(_m.c.group_id, _m.c.consumer_uuid, _c.c.consumer_type,
                       root.c.id, root.c.uuid, _a.c.resource_class_id)
             .select_from(_m)
             .outerjoin(_c, _c.c.uuid == _m.c.consumer_uuid)
             .outerjoin(_a, _a.c.consumer_id == _c.c.id)
             .outerjoin(_p, _p.c.id == _a.c.provider_id)
             .outerjoin(root, root.c.id == _p.c.root_provider_id)
             .where(_m.c.group_id.in_(sorted(group_ids)))
             .order_by(_m.c.group_id, _m.c.consumer_uuid))
    for group_id, uuid, kind, root_id, root_uuid, class_id in \
            conn.execute(query):
        member = found[group_id].setdefault(uuid, Held(kind, {}, set()))
        if root_uuid is not None:
            member.roots[root_id] = root_uuid
            member.class_ids.add(class_id)
    return found


def placement_of(conn, consumer_uuid):
    """(consumer type, {root id}, {class id}) of what a consumer holds
    now; (None, set(), set()) when it holds nothing."""
    rows = conn.execute(
        sa.select(_c.c.consumer_type, _p.c.root_provider_id,
                  _a.c.resource_class_id)
        .select_from(_c).join(_a, _a.c.consumer_id == _c.c.id)
        .join(_p, _p.c.id == _a.c.provider_id)
        .where(_c.c.uuid == consumer_uuid)).all()
    if not rows:
        return None, set(), set()
    return (rows[0][0], {r[1] for r in rows}, {r[2] for r in rows})


def classes_of(conn, consumer_uuids):
    """{consumer uuid: {class id}} of what the consumers hold."""
    found = collections.defaultdict(set)
    if consumer_uuids:
        rows = conn.execute(
            sa.select(_c.c.uuid, _a.c.resource_class_id).distinct()
            .select_from(_c).join(_a, _a.c.consumer_id == _c.c.id)
            .where(_c.c.uuid.in_(sorted(set(consumer_uuids)))))
        for uuid, class_id in rows:
            found[uuid].add(class_id)
    return found
