"""Writes of ``allocworker-manage placement import`` into allocworker's
books: rows copied with the uuids, generations and timestamps Placement
gave them (the ordinary writes make their own), in bulk statements.
Every function runs inside the caller's one write transaction."""

import collections
import math

from oslo_utils import timeutils
import sqlalchemy as sa

from allocworker import capacity
from allocworker.db.catalog import providers as db_providers
from allocworker.db.grouping import epoch as db_epoch
from allocworker.db.grouping import groups as db_groups
from allocworker.db.ledger import allocations as db_allocations
from allocworker.db.limits import project_counters
from allocworker.db import schema
from allocworker import partitions

_p = schema.providers
_inv = schema.inventories
_c = schema.consumers
_a = schema.allocations
_rc = schema.resource_classes
_u = schema.usages
_pt = schema.provider_traits
_pa = schema.provider_aggregates

TargetConsumer = collections.namedtuple(
    'TargetConsumer', ['id', 'uuid', 'generation', 'project_id', 'user_id',
                       'consumer_type', 'allocations', 'provider_ids'])


def analyze(engine):
    """Fresh planner statistics for the tables a pass filled: right
    after a bulk load they still describe empty tables, and MariaDB then
    plans the audit's joins as nested loops (over ten minutes at 200,000
    allocations, 3 s with statistics). After the commit: MySQL's ANALYZE
    TABLE commits implicitly."""
    tables = [t.name for t in (_p, _inv, _c, _a, _u, _pt, _pa)]
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level='AUTOCOMMIT')
        if conn.dialect.name == 'mysql':
            conn.exec_driver_sql('ANALYZE TABLE ' + ', '.join(tables)).all()
        elif conn.dialect.name == 'postgresql':
            for table in tables:
                conn.exec_driver_sql('ANALYZE ' + table)
        else:
            conn.exec_driver_sql('ANALYZE')


def provider_ids(conn, partition):
    """{uuid: id} of every provider of ``partition``."""
    return dict(conn.execute(sa.select(_p.c.uuid, _p.c.id)
                             .where(_p.c.partition == partition)).all())


def providers(conn, partition):
    """{uuid: (id, name, generation, parent_uuid, root_uuid)} of
    ``partition``'s providers."""
    parent, root = _p.alias('parent'), _p.alias('root')
    rows = conn.execute(
        sa.select(_p.c.uuid, _p.c.id, _p.c.name, _p.c.generation,
                  parent.c.uuid, root.c.uuid)
        .select_from(_p)
        .outerjoin(parent, parent.c.id == _p.c.parent_provider_id)
        .outerjoin(root, root.c.id == _p.c.root_provider_id)
        .where(_p.c.partition == partition))
    return {row[0]: tuple(row[1:]) for row in rows}


def _stamps(created_at, updated_at):
    return {'created_at': created_at or timeutils.utcnow(),
            'updated_at': updated_at}


def insert_providers(conn, rows, partition):
    """rows: [(uuid, name, generation, created_at, updated_at)], into
    ``partition``, without their links (``link_providers`` sets those
    once all exist)."""
    if rows:
        conn.execute(sa.insert(_p), [
            dict(uuid=u, name=n, generation=g, partition=partition,
                 **_stamps(c, up))
            for u, n, g, c, up in rows])


def update_providers(conn, rows):
    """rows: [(id, name, generation, created_at, updated_at)]."""
    if rows:
        conn.execute(
            sa.update(_p).where(_p.c.id == sa.bindparam('pid'))
            .values(name=sa.bindparam('n'), generation=sa.bindparam('g'),
                    updated_at=sa.bindparam('up')),
            [{'pid': i, 'n': n, 'g': g, 'up': up}
             for i, n, g, _c, up in rows])


def link_providers(conn, links):
    """links: [(id, parent_id or None, root_id)]."""
    if links:
        conn.execute(
            sa.update(_p).where(_p.c.id == sa.bindparam('pid'))
            .values(parent_provider_id=sa.bindparam('parent'),
                    root_provider_id=sa.bindparam('root')),
            [{'pid': i, 'parent': parent, 'root': root}
             for i, parent, root in links])


def delete_providers(conn, doomed):
    """doomed: {uuid: (id, generation)} of providers without allocations,
    removed together (children with their parents)."""
    if not doomed:
        return
    ids = sorted(i for i, _g in doomed.values())
    conn.execute(sa.update(_p).where(_p.c.id.in_(ids))
                 .values(parent_provider_id=None, root_provider_id=None))
    for uuid, (provider_id, generation) in sorted(doomed.items()):
        db_providers.delete(conn, provider_id, uuid, generation)


def inventories(conn, provider_ids):
    """{provider_id: {class_id: (total, reserved, min_unit, max_unit,
    step_size, allocation_ratio)}}."""
    found = collections.defaultdict(dict)
    if not provider_ids:
        return found
    rows = conn.execute(
        sa.select(_inv.c.provider_id, _inv.c.resource_class_id,
                  _inv.c.total, _inv.c.reserved, _inv.c.min_unit,
                  _inv.c.max_unit, _inv.c.step_size,
                  _inv.c.allocation_ratio)
        .where(_inv.c.provider_id.in_(sorted(provider_ids))))
    for row in rows:
        found[row[0]][row[1]] = tuple(row[2:])
    return found


def replace_inventories(conn, provider_ids, rows):
    """The inventories of ``provider_ids`` become ``rows``:
    [(provider_id, class_id, total, reserved, min_unit, max_unit,
    step_size, allocation_ratio)]."""
    if provider_ids:
        conn.execute(sa.delete(_inv).where(
            _inv.c.provider_id.in_(sorted(provider_ids))))
    if rows:
        now = timeutils.utcnow()
        conn.execute(sa.insert(_inv), [
            {'provider_id': r[0], 'resource_class_id': r[1], 'total': r[2],
             'reserved': r[3], 'min_unit': r[4], 'max_unit': r[5],
             'step_size': r[6], 'allocation_ratio': r[7], 'forced': False,
             'created_at': now} for r in rows])
    _set_counters(conn, provider_ids, rows)


def _set_counters(conn, provider_ids, rows):
    """Every inventory written gets its usage counter row, with its room
    left (capacity rounded down, minus what is used), as every inventory
    write keeps them (db/catalog/providers.py); counters of classes that are no
    longer inventoried go when nothing is counted on them."""
    counted = set()
    if provider_ids:
        wanted = {(r[0], r[1]) for r in rows}
        held = conn.execute(
            sa.select(_u.c.provider_id, _u.c.resource_class_id, _u.c.used)
            .where(_u.c.provider_id.in_(sorted(provider_ids)))).all()
        gone = [(p, c) for p, c, used in held
                if (p, c) not in wanted and not used]
        if gone:
            conn.execute(sa.delete(_u).where(
                _u.c.provider_id == sa.bindparam('p'),
                _u.c.resource_class_id == sa.bindparam('c')),
                [{'p': p, 'c': c} for p, c in gone])
        counted = {(p, c) for p, c, _used in held if (p, c) in wanted}
    room = {(r[0], r[1]): int(math.floor(
        capacity.capacity(capacity.Inventory(*r[2:])))) for r in rows}
    new = [{'provider_id': p, 'resource_class_id': c, 'used': 0,
            'free': free} for (p, c), free in sorted(room.items())
           if (p, c) not in counted]
    if new:
        conn.execute(sa.insert(_u), new)
    if counted:
        conn.execute(
            sa.update(_u).where(_u.c.provider_id == sa.bindparam('p'),
                                _u.c.resource_class_id == sa.bindparam('c'))
            .values(free=sa.bindparam('room') - _u.c.used),
            [{'p': p, 'c': c, 'room': room[(p, c)]}
             for p, c in sorted(counted)])


def mark_forced(conn, keys):
    """Inventories of these (provider_id, class_id) are knowingly below
    their usage (over capacity in Placement's books)."""
    if keys:
        conn.execute(
            sa.update(_inv).where(
                _inv.c.provider_id == sa.bindparam('pid'),
                _inv.c.resource_class_id == sa.bindparam('cid'))
            .values(forced=True),
            [{'pid': p, 'cid': c} for p, c in sorted(keys)])


def facet_pairs(conn, kind, partition):
    """{(provider_uuid, value)} of ``kind`` 'traits' (the value is the
    trait's id) or 'aggregates' (the aggregate's uuid) of
    ``partition``'s providers."""
    if kind == 'traits':
        query = (sa.select(_p.c.uuid, _pt.c.trait_id)
                 .join(_p, _p.c.id == _pt.c.provider_id))
    else:
        query = (sa.select(_p.c.uuid, _pa.c.aggregate_uuid)
                 .join(_p, _p.c.id == _pa.c.provider_id))
    return {tuple(row) for row in conn.execute(
        query.where(_p.c.partition == partition))}


def change_facets(conn, kind, added, removed):
    """Add and remove (provider_id, value) pairs; for traits the value
    is the trait id, for aggregates the aggregate uuid."""
    table, column = ((_pt, 'trait_id') if kind == 'traits'
                     else (_pa, 'aggregate_uuid'))
    if removed:
        conn.execute(sa.delete(table).where(
            table.c.provider_id == sa.bindparam('pid'),
            table.c[column] == sa.bindparam('value')),
            [{'pid': p, 'value': v} for p, v in sorted(removed)])
    if added:
        conn.execute(sa.insert(table), [
            {'provider_id': p, column: v} for p, v in sorted(added)])


def insert_consumers(conn, rows):
    """rows: [(uuid, generation, project_id, user_id, type or None,
    created_at, updated_at)]; {uuid: id}."""
    if not rows:
        return {}
    return dict(conn.execute(_INSERT_CONSUMERS, [
        dict(uuid=u, generation=g, project_id=p, user_id=us,
             consumer_type=t or '', **_stamps(c, up))
        for u, g, p, us, t, c, up in rows]).all())


_INSERT_CONSUMERS = sa.insert(_c).returning(_c.c.uuid, _c.c.id,
                                            sort_by_parameter_order=True)


def update_consumers(conn, rows):
    """rows: [(id, generation, project_id, user_id, type or None,
    created_at, updated_at)]."""
    if rows:
        conn.execute(
            sa.update(_c).where(_c.c.id == sa.bindparam('cid'))
            .values(generation=sa.bindparam('g'),
                    project_id=sa.bindparam('p'), user_id=sa.bindparam('us'),
                    consumer_type=sa.bindparam('t'),
                    updated_at=sa.bindparam('up')),
            [{'cid': i, 'g': g, 'p': p, 'us': us, 't': t or '', 'up': up}
             for i, g, p, us, t, _c, up in rows])


def forget_kept(conn):
    """Make workers read groups' members and roots' domains afresh: a
    pass writes consumers, allocations and aggregates without the
    groups' locks (``groups.kept``)."""
    db_groups.forget_members(conn)
    db_epoch.moved(conn)


def remove_allocation_rows(conn, consumer_ids):
    db_allocations.delete_rows(conn, consumer_ids)


def insert_allocations(conn, rows):
    """rows: [(consumer_id, provider_id, class_id, used)]."""
    db_allocations.insert_rows(conn, rows, timeutils.utcnow())


def consumers(conn, uuids, partition):
    """{uuid: TargetConsumer} of those of ``uuids`` living in
    ``partition``, with their allocations as {(provider_uuid, class_id):
    used} and those providers' {uuid: id} (a ``shared`` one among them
    lies outside the pass's own providers). One living elsewhere was
    refused before the pass wrote: left out here all the same, so that
    no pass ever changes it."""
    if not uuids:
        return {}
    found = {}
    rows = conn.execute(
        sa.select(_c.c.id, _c.c.uuid, _c.c.generation, _c.c.project_id,
                  _c.c.user_id, _c.c.consumer_type)
        .where(_c.c.uuid.in_(sorted(uuids))))
    for row in rows:
        found[row[1]] = TargetConsumer(*row[:5], row[5] or None, {}, {})
    by_id = {c.id: c for c in found.values()}
    lying = collections.defaultdict(set)
    if by_id:
        for consumer_id, provider, class_id, used, where, provider_id in \
                conn.execute(
                    sa.select(_a.c.consumer_id, _p.c.uuid,
                              _a.c.resource_class_id, _a.c.used,
                              _p.c.partition, _p.c.id)
                    .join(_p, _p.c.id == _a.c.provider_id)
                    .where(_a.c.consumer_id.in_(sorted(by_id)))):
            by_id[consumer_id].allocations[(provider, class_id)] = used
            by_id[consumer_id].provider_ids[provider] = provider_id
            lying[consumer_id].add(where)
    return {u: c for u, c in found.items()
            if partitions.lives_in(lying[c.id]) in (partition, None)}


def remove_consumers(conn, doomed):
    """Delete these TargetConsumers and their allocation rows, retiring
    their generations."""
    db_allocations.delete_rows(conn, [c.id for c in doomed])
    db_allocations.delete_consumers(conn, doomed)


def add_usage(conn, deltas):
    """{(provider_id, class_id): delta} onto the usage counters."""
    db_providers.add_usage(conn, deltas)


def count_projects(conn, projects):
    """Set the usage counters of ``projects`` from the books the pass
    wrote.

    Counted at the end of the pass from what the transaction holds (a
    pass copies consumers whose project, type and rows Placement changed
    in any way; following each through its rows would repeat what the
    counters' own check does in one statement), as corrections added to
    the counters, so a writer that commits meanwhile keeps its own move.
    Only ``projects``, those whose consumers the pass wrote or removed:
    another partition's projects keep their counters as they are, even
    a count that is off (``allocworker-manage db refresh-room`` mends
    those)."""
    usage, consumers = project_counters.counters_off(conn)
    project_counters.add(
        conn, {row[:3]: row[4] - row[3] for row in usage
               if row[0] in projects},
        {row[:2]: row[3] - row[2] for row in consumers
         if row[0] in projects})


def over_capacity(conn, provider_ids=None, partition=None):
    """[(provider_id, provider_uuid, class_id, class name, used,
    capacity)] where usage exceeds capacity (forced or not), among
    ``provider_ids`` or ``partition``'s providers when given."""
    capacity = (_inv.c.total - _inv.c.reserved) * _inv.c.allocation_ratio
    query = (sa.select(_u.c.provider_id, _p.c.uuid, _u.c.resource_class_id,
                       _rc.c.name, _u.c.used, capacity)
             .select_from(_u)
             .join(_inv, sa.and_(
                 _inv.c.provider_id == _u.c.provider_id,
                 _inv.c.resource_class_id == _u.c.resource_class_id))
             .join(_p, _p.c.id == _u.c.provider_id)
             .join(_rc, _rc.c.id == _u.c.resource_class_id)
             .where(_u.c.used > capacity))
    if provider_ids is not None:
        query = query.where(_u.c.provider_id.in_(sorted(provider_ids)))
    if partition is not None:
        query = query.where(_p.c.partition == partition)
    return [tuple(row) for row in conn.execute(query)]
