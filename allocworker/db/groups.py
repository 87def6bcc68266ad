"""Queries on consumer groups and their members."""

import collections

from oslo_utils import timeutils
import sqlalchemy as sa

from allocworker.db import api
from allocworker.db import generations
from allocworker.db import schema

_g = schema.consumer_groups
_m = schema.group_members
_c = schema.consumers
_a = schema.allocations
_p = schema.providers

Group = collections.namedtuple(
    'Group', ['id', 'uuid', 'name', 'project_id', 'policy', 'max_per_root',
              'generation'])
_COLUMNS = [_g.c.id, _g.c.uuid, _g.c.name, _g.c.project_id, _g.c.policy,
            _g.c.max_per_root, _g.c.generation]


def create(conn, uuid, name, project_id, policy, max_per_root):
    generation = generations.first(conn, generations.GROUP, [uuid])[uuid]
    conn.execute(sa.insert(_g).values(
        uuid=uuid, name=name, project_id=project_id, policy=policy,
        max_per_root=max_per_root, generation=generation,
        created_at=timeutils.utcnow()))


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


def lock(conn, group_ids):
    """Lock groups by id, in id order; {id: Group}."""
    if not group_ids:
        return {}
    rows = conn.execute(api.for_update(
        sa.select(*_COLUMNS).where(_g.c.id.in_(sorted(group_ids)))
        .order_by(_g.c.id)))
    return {row.id: Group(*row) for row in rows}


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
    """{group_id: {member_uuid: {root_provider_id}}}; members without
    allocations map to an empty set."""
    if not group_ids:
        return {}
    query = (sa.select(_m.c.group_id, _m.c.consumer_uuid,
                       _p.c.root_provider_id)
             .select_from(_m)
             .outerjoin(_c, _c.c.uuid == _m.c.consumer_uuid)
             .outerjoin(_a, _a.c.consumer_id == _c.c.id)
             .outerjoin(_p, _p.c.id == _a.c.provider_id)
             .where(_m.c.group_id.in_(sorted(group_ids))))
    found = collections.defaultdict(lambda: collections.defaultdict(set))
    for group_id, uuid, root_id in conn.execute(query):
        roots = found[group_id][uuid]
        if root_id is not None:
            roots.add(root_id)
    return found


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


def bump_generation(conn, group_id, expected):
    result = conn.execute(
        sa.update(_g).where(_g.c.id == group_id,
                            _g.c.generation == expected)
        .values(generation=_g.c.generation + 1,
                updated_at=timeutils.utcnow()))
    return result.rowcount == 1


def describe(conn, uuids=None, project_id=None):
    """[(Group, {member_uuid: {root_uuid}})] in one statement."""
    root = _p.alias('root')
    query = (sa.select(*_COLUMNS, _m.c.consumer_uuid,
                       root.c.uuid.label('root_uuid'))
             .select_from(_g)
             .outerjoin(_m, _m.c.group_id == _g.c.id)
             .outerjoin(_c, _c.c.uuid == _m.c.consumer_uuid)
             .outerjoin(_a, _a.c.consumer_id == _c.c.id)
             .outerjoin(_p, _p.c.id == _a.c.provider_id)
             .outerjoin(root, root.c.id == _p.c.root_provider_id)
             .order_by(_g.c.name, _g.c.uuid, _m.c.consumer_uuid))
    if uuids is not None:
        if not uuids:
            return []
        query = query.where(_g.c.uuid.in_(sorted(set(uuids))))
    if project_id is not None:
        query = query.where(_g.c.project_id == project_id)
    found = collections.OrderedDict()
    width = len(Group._fields)
    for row in conn.execute(query):
        members = found.setdefault(Group(*row[:width]), {})
        if row.consumer_uuid is not None:
            roots = members.setdefault(row.consumer_uuid, set())
            if row.root_uuid is not None:
                roots.add(row.root_uuid)
    return list(found.items())
