"""Writes of ``allocworker-manage placement import`` into allocworker's
books: rows copied with the uuids, generations and timestamps Placement
gave them (the ordinary writes make their own), in bulk statements.
Every function runs inside the caller's one write transaction."""

import collections
import math

from oslo_utils import timeutils
import sqlalchemy as sa

from allocworker import capacity
from allocworker.db import allocations as db_allocations
from allocworker.db import generations
from allocworker.db import project_counters
from allocworker.db import providers as db_providers
from allocworker.db import schema

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
                       'consumer_type', 'allocations'])


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


def held_books(conn):
    """How many providers and consumers the target already holds."""
    return {name: conn.execute(sa.select(sa.func.count())
                               .select_from(table)).scalar()
            for name, table in (('providers', _p), ('consumers', _c))}


def last_change(conn):
    """The latest created_at/updated_at copied into providers and
    consumers (the import copies Placement's own), or None."""
    latest = None
    for table in (_p, _c):
        found = conn.execute(sa.select(sa.func.max(sa.func.coalesce(
            table.c.updated_at, table.c.created_at)))).scalar()
        if found is not None and (latest is None or found > latest):
            latest = found
    return latest


def clear_books(conn):
    """Remove every provider, consumer and what hangs on them, retiring
    their generations as any delete does."""
    consumers = dict(conn.execute(sa.select(_c.c.uuid,
                                            _c.c.generation)).all())
    providers = dict(conn.execute(sa.select(_p.c.uuid,
                                            _p.c.generation)).all())
    for table in (_u, schema.project_usages, schema.project_consumers, _a,
                  _c, _inv, _pt, _pa):
        conn.execute(sa.delete(table))
    conn.execute(sa.update(_p).values(parent_provider_id=None,
                                      root_provider_id=None))
    conn.execute(sa.delete(_p))
    generations.retire(conn, generations.CONSUMER, consumers)
    generations.retire(conn, generations.PROVIDER, providers)


def provider_ids(conn):
    """{uuid: id} of every provider."""
    return dict(conn.execute(sa.select(_p.c.uuid, _p.c.id)).all())


def providers(conn):
    """{uuid: (id, name, generation, parent_uuid, root_uuid)}."""
    parent, root = _p.alias('parent'), _p.alias('root')
    rows = conn.execute(
        sa.select(_p.c.uuid, _p.c.id, _p.c.name, _p.c.generation,
                  parent.c.uuid, root.c.uuid)
        .select_from(_p)
        .outerjoin(parent, parent.c.id == _p.c.parent_provider_id)
        .outerjoin(root, root.c.id == _p.c.root_provider_id))
    return {row[0]: tuple(row[1:]) for row in rows}


def _stamps(created_at, updated_at):
    return {'created_at': created_at or timeutils.utcnow(),
            'updated_at': updated_at}


def insert_providers(conn, rows):
    """rows: [(uuid, name, generation, created_at, updated_at)], without
    their links (``link_providers`` sets those once all exist)."""
    if rows:
        conn.execute(sa.insert(_p), [
            dict(uuid=u, name=n, generation=g, **_stamps(c, up))
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
    write keeps them (db/providers.py); counters of classes that are no
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


def facet_pairs(conn, kind):
    """{(provider_uuid, value)} of ``kind`` 'traits' (the value is the
    trait's id) or 'aggregates' (the aggregate's uuid)."""
    if kind == 'traits':
        query = (sa.select(_p.c.uuid, _pt.c.trait_id)
                 .join(_p, _p.c.id == _pt.c.provider_id))
    else:
        query = (sa.select(_p.c.uuid, _pa.c.aggregate_uuid)
                 .join(_p, _p.c.id == _pa.c.provider_id))
    return {tuple(row) for row in conn.execute(query)}


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


def remove_allocation_rows(conn, consumer_ids):
    db_allocations.delete_rows(conn, consumer_ids)


def insert_allocations(conn, rows):
    """rows: [(consumer_id, provider_id, class_id, used)]."""
    db_allocations.insert_rows(conn, rows, timeutils.utcnow())


def consumers(conn, uuids):
    """{uuid: TargetConsumer} of those of ``uuids`` held here, with
    their allocations as {(provider_uuid, class_id): used}."""
    if not uuids:
        return {}
    found = {}
    rows = conn.execute(
        sa.select(_c.c.id, _c.c.uuid, _c.c.generation, _c.c.project_id,
                  _c.c.user_id, _c.c.consumer_type)
        .where(_c.c.uuid.in_(sorted(uuids))))
    for row in rows:
        found[row[1]] = TargetConsumer(*row[:5], row[5] or None, {})
    by_id = {c.id: c for c in found.values()}
    if by_id:
        for consumer_id, provider, class_id, used in conn.execute(
                sa.select(_a.c.consumer_id, _p.c.uuid, _a.c.resource_class_id,
                          _a.c.used)
                .join(_p, _p.c.id == _a.c.provider_id)
                .where(_a.c.consumer_id.in_(sorted(by_id)))):
            by_id[consumer_id].allocations[(provider, class_id)] = used
    return found


def consumer_uuids(conn):
    return {row[0] for row in conn.execute(sa.select(_c.c.uuid))}


def remove_consumers(conn, doomed):
    """Delete these TargetConsumers and their allocation rows, retiring
    their generations."""
    db_allocations.delete_rows(conn, [c.id for c in doomed])
    db_allocations.delete_consumers(conn, doomed)


def add_usage(conn, deltas):
    """{(provider_id, class_id): delta} onto the usage counters."""
    db_providers.add_usage(conn, deltas)


def count_projects(conn):
    """Set the project usage counters from the books the pass wrote.

    Counted at the end of the pass from what the transaction holds (a
    pass copies consumers whose project, type and rows Placement changed
    in any way; following each through its rows would repeat what the
    counters' own refresh does in two statements), as corrections added
    to the counters, so a writer that commits meanwhile keeps its own
    move."""
    project_counters.refresh(conn)


def over_capacity(conn, provider_ids=None):
    """[(provider_id, provider_uuid, class_id, class name, used,
    capacity)] where usage exceeds capacity (forced or not)."""
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
    return [tuple(row) for row in conn.execute(query)]
