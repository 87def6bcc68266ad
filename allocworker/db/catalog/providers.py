"""Queries on providers, their inventories and their usages."""

import collections
import math

from oslo_utils import timeutils
import sqlalchemy as sa
from sqlalchemy.dialects import mysql as mysql_dml
from sqlalchemy.dialects import postgresql as postgresql_dml
from sqlalchemy.dialects import sqlite as sqlite_dml

from allocworker import capacity
from allocworker.db import api
from allocworker.db import generations
from allocworker.db.grouping import epoch as db_epoch
from allocworker.db import prepared
from allocworker.db import schema

_p = schema.providers
_inv = schema.inventories
_rc = schema.resource_classes
_alloc = schema.allocations
_u = schema.usages

Provider = collections.namedtuple(
    'Provider', ['id', 'uuid', 'name', 'generation', 'parent_uuid',
                 'root_uuid', 'partition'])


def _provider_query():
    parent = _p.alias('parent')
    root = _p.alias('root')
    return (sa.select(_p.c.id, _p.c.uuid, _p.c.name, _p.c.generation,
                      parent.c.uuid.label('parent_uuid'),
                      root.c.uuid.label('root_uuid'), _p.c.partition)
            .select_from(_p)
            .outerjoin(parent, _p.c.parent_provider_id == parent.c.id)
            .outerjoin(root, _p.c.root_provider_id == root.c.id))


def get(conn, uuid):
    row = conn.execute(_provider_query().where(_p.c.uuid == uuid)).first()
    return Provider(*row) if row else None


def lock_by_uuid(conn, uuid):
    """The provider row, locked until commit; None when it does not exist."""
    row = conn.execute(api.for_update(
        sa.select(_p.c.id, _p.c.generation, _p.c.root_provider_id,
                  _p.c.partition)
        .where(_p.c.uuid == uuid))).first()
    return row


Locked = collections.namedtuple('Locked', ['generation', 'root_id', 'uuid',
                                           'partition'])
# What ``lock`` reads of each provider, after its id (``Locked``'s
# fields): the partition rides in the lock an allocation takes anyway,
# so judging an item's partitions costs no statement.
LOCKED_COLUMNS = (_p.c.generation, _p.c.root_provider_id, _p.c.uuid,
                  _p.c.partition)


_LOCK = api.for_update(
    sa.select(_p.c.id, *LOCKED_COLUMNS)
    .where(_p.c.id.in_(sa.bindparam('ids', expanding=True)))
    .order_by(_p.c.id))


def lock(conn, provider_ids):
    """Lock providers in id order (a global order, so writers never
    deadlock on each other); {id: Locked}."""
    if not provider_ids:
        return {}
    rows = conn.execute(_LOCK, {'ids': sorted(provider_ids)})
    return {row[0]: Locked(*row[1:]) for row in rows}


def roots_of(conn, provider_ids):
    """{provider_id: root_provider_id}, read in this transaction (by a
    claim's window: ``note_roots``) or now."""
    noted = _noted_roots(conn)
    found = {p: noted[p] for p in provider_ids if p in noted}
    missing = set(provider_ids) - set(found)
    if missing:
        rows = conn.execute(sa.select(_p.c.id, _p.c.root_provider_id)
                            .where(_p.c.id.in_(sorted(missing))))
        found.update(rows.all())
    return found


def note_roots(conn, roots):
    """Keep {provider id: root id} read in this transaction for its
    ``roots_of``: a claim judging its window's candidates against its
    groups' rules needs the roots the window was read with."""
    _noted_roots(conn).update(roots)


def _noted_roots(conn):
    return api.per_transaction(conn, 'roots of providers', dict)


def ids_by_uuid(conn, uuids):
    """{uuid: id} for those of ``uuids`` that exist."""
    if not uuids:
        return {}
    rows = conn.execute(sa.select(_p.c.uuid, _p.c.id)
                        .where(_p.c.uuid.in_(sorted(set(uuids)))))
    return dict(rows.all())


def create(conn, uuid, name, partition, parent_id=None, root_id=None):
    now = timeutils.utcnow()
    generation = generations.first(conn, generations.PROVIDER, [uuid])[uuid]
    result = conn.execute(sa.insert(_p).values(
        uuid=uuid, name=name, generation=generation, partition=partition,
        parent_provider_id=parent_id, root_provider_id=root_id,
        created_at=now))
    provider_id = result.inserted_primary_key[0]
    if root_id is None:
        conn.execute(sa.update(_p).where(_p.c.id == provider_id)
                     .values(root_provider_id=provider_id))
    return provider_id


def has_children(conn, provider_id):
    query = sa.select(_p.c.id).where(
        _p.c.parent_provider_id == provider_id).limit(1)
    return conn.execute(query).first() is not None


def delete(conn, provider_id, uuid, generation):
    conn.execute(sa.delete(_u).where(_u.c.provider_id == provider_id))
    conn.execute(sa.delete(_inv).where(_inv.c.provider_id == provider_id))
    conn.execute(sa.delete(schema.provider_traits)
                 .where(schema.provider_traits.c.provider_id == provider_id))
    conn.execute(sa.delete(schema.provider_aggregates).where(
        schema.provider_aggregates.c.provider_id == provider_id))
    # InnoDB refuses to delete a row whose foreign key points at itself.
    conn.execute(sa.update(_p).where(_p.c.id == provider_id)
                 .values(root_provider_id=None))
    conn.execute(sa.delete(_p).where(_p.c.id == provider_id))
    generations.retire(conn, generations.PROVIDER, {uuid: generation})
    # Its id may come back (SQLite) on a root of other domains.
    db_epoch.moved(conn)


def bump_generation(conn, provider_id, expected):
    """Compare-and-swap the generation up by one; False when someone else
    moved it."""
    return bump_generations(conn, {provider_id: expected})


def bump_generations(conn, expected, now=None):
    """Compare-and-swap many providers' generations up by one, in one
    statement; ``expected`` is {provider_id: generation seen}."""
    if not expected:
        return True
    result = conn.execute(_BUMP, {'pairs': sorted(expected.items()),
                                  'now': now or timeutils.utcnow()})
    return result.rowcount == len(expected)


_BUMP = (sa.update(_p)
         .where(sa.tuple_(_p.c.id, _p.c.generation).in_(
             sa.bindparam('pairs', expanding=True)))
         .values(generation=_p.c.generation + 1,
                 updated_at=sa.bindparam('now')))


def _inventory_columns():
    return [getattr(_inv.c, f) for f in capacity.Inventory._fields]


def replace_inventories(conn, provider_id, by_class_id, forced=()):
    """Make the provider's inventory exactly ``by_class_id``; class ids in
    ``forced`` are marked as knowingly below their usage."""
    existing = {row.resource_class_id: row.id for row in conn.execute(
        sa.select(_inv.c.resource_class_id, _inv.c.id)
        .where(_inv.c.provider_id == provider_id))}
    gone = [existing[c] for c in existing if c not in by_class_id]
    if gone:
        conn.execute(sa.delete(_inv).where(_inv.c.id.in_(gone)))
    now = timeutils.utcnow()
    for class_id, inventory in by_class_id.items():
        values = dict(inventory._asdict(), forced=class_id in forced)
        if class_id in existing:
            conn.execute(sa.update(_inv)
                         .where(_inv.c.id == existing[class_id])
                         .values(updated_at=now, **values))
        else:
            conn.execute(sa.insert(_inv).values(
                provider_id=provider_id, resource_class_id=class_id,
                created_at=now, **values))
    _set_free(conn, provider_id, by_class_id, existing)


def _set_free(conn, provider_id, by_class_id, existing):
    """Give every inventory of the provider its counter row and set its
    room left from the new capacity (rounded down, as ``capacity.fits``
    compares whole units with it)."""
    counted = {row[0] for row in conn.execute(
        sa.select(_u.c.resource_class_id).where(_u.c.provider_id ==
                                                provider_id))}
    gone = [c for c in existing if c not in by_class_id and c in counted]
    if gone:
        # A reshape removes inventory before it moves the allocations
        # away (and judges what is still in use after): a counter that
        # holds something stays, with no room; an empty one goes.
        where = (_u.c.provider_id == provider_id,
                 _u.c.resource_class_id.in_(gone))
        conn.execute(sa.delete(_u).where(*where, _u.c.used == 0))
        conn.execute(sa.update(_u).where(*where).values(free=-_u.c.used))
    new = [{'provider_id': provider_id, 'resource_class_id': c, 'used': 0,
            'free': 0} for c in sorted(by_class_id) if c not in counted]
    if new:
        conn.execute(sa.insert(_u), new)
    if by_class_id:
        conn.execute(_SET_FREE, [
            {'p': provider_id, 'c': c,
             'room': int(math.floor(capacity.capacity(inventory)))}
            for c, inventory in sorted(by_class_id.items())])


_SET_FREE = (sa.update(_u)
             .where(_u.c.provider_id == sa.bindparam('p'),
                    _u.c.resource_class_id == sa.bindparam('c'))
             .values(free=sa.bindparam('room') - _u.c.used))


CapacityState = collections.namedtuple(
    'CapacityState', ['inventories', 'used', 'class_ids'])


def _capacity_select(provider_wanted):
    return (sa.select(_inv.c.provider_id, _rc.c.name, *_inventory_columns(),
                      _u.c.used, _rc.c.id)
            .join(_rc, _inv.c.resource_class_id == _rc.c.id)
            .outerjoin(_u, sa.and_(
                _u.c.provider_id == _inv.c.provider_id,
                _u.c.resource_class_id == _inv.c.resource_class_id))
            .where(provider_wanted))


_CAPACITY_STATE = _capacity_select(
    _inv.c.provider_id.in_(sa.bindparam('ids', expanding=True)))
# The same on PostgreSQL as SQL text, the providers bound as one array
# (``%(ids)s``): for a statement that reads more in the same round trip
# (``db.quota.capacity_and_locked_usage``, which prepares it beside the
# usage read of up to 8 projects and plans it for its values beside
# that of more).
CAPACITY_STATE_PG = str(_capacity_select(prepared.any_of(
    _inv.c.provider_id, 'ids', sa.Integer, 'postgresql')).compile(
        dialect=postgresql_dml.dialect()))
CAPACITY_STATE_COLUMNS = len(_CAPACITY_STATE.selected_columns)


def capacity_state(conn, provider_ids):
    """What a capacity check needs, in one statement: per (provider_id,
    class name) the Inventory and what is used, and the class ids.

    A separate statement from ``lock``, on purpose: at READ COMMITTED a
    statement reads every table at the snapshot it started with, so
    inventories and usages read in the locking statement itself could
    predate the commit of the writer whose lock it waited for."""
    if not provider_ids:
        return CapacityState({}, {}, {})
    return capacity_state_of(conn.execute(_CAPACITY_STATE,
                                          {'ids': sorted(provider_ids)}))


def capacity_state_of(rows):
    """The CapacityState of ``_CAPACITY_STATE``'s rows (or of
    ``CAPACITY_STATE_PG``'s)."""
    state = CapacityState({}, {}, {})
    for row in rows:
        key = (row[0], row[1])
        state.inventories[key] = capacity.Inventory(*row[2:8])
        state.class_ids[row[1]] = row[9]
        if row[8]:
            state.used[key] = int(row[8])
    return state


def add_usage(conn, deltas):
    """Apply {(provider_id, class_id): delta} to the usage counters in one
    upsert: a missing counter row is created, an existing one moved."""
    rows = [{'provider_id': p, 'resource_class_id': c, 'used': d,
             'free': -d}
            for (p, c), d in sorted(deltas.items()) if d]
    if not rows:
        return
    dialect = conn.dialect.name
    statement = _USAGE_UPSERTS.get(dialect)
    if statement is None:
        statement = _USAGE_UPSERTS[dialect] = _usage_upsert(dialect)
    conn.execute(statement, rows)


_USAGE_UPSERTS = {}


def _usage_upsert(dialect):
    """One statement for every row (executemany, compiled once)."""
    if dialect == 'mysql':
        statement = mysql_dml.insert(_u)
        return statement.on_duplicate_key_update(
            used=_u.c.used + statement.inserted.used,
            free=_u.c.free - statement.inserted.used)
    insert = (postgresql_dml.insert if dialect == 'postgresql'
              else sqlite_dml.insert)
    statement = insert(_u)
    return statement.on_conflict_do_update(
        index_elements=[_u.c.provider_id, _u.c.resource_class_id],
        set_={'used': _u.c.used + statement.excluded.used,
              'free': _u.c.free - statement.excluded.used})


def usages(conn, provider_ids):
    """{(provider_id, class_name): used} of what is allocated now."""
    if not provider_ids:
        return {}
    query = (sa.select(_u.c.provider_id, _rc.c.name, _u.c.used)
             .join(_rc, _u.c.resource_class_id == _rc.c.id)
             .where(_u.c.provider_id.in_(sorted(provider_ids)),
                    _u.c.used != 0))
    return {(row[0], row[1]): int(row[2]) for row in conn.execute(query)}


def describe(conn, uuids=None):
    """Providers with their inventories and usages, read in one statement.

    Returns [(Provider, {class: (Inventory, used)})], ordered by name;
    ``uuids`` None means every provider.
    """
    usage = _u
    base = _provider_query().subquery('prov')
    query = (sa.select(base, _rc.c.name.label('class_name'),
                       *_inventory_columns(),
                       sa.func.coalesce(usage.c.used, 0).label('used'))
             .select_from(base)
             .outerjoin(_inv, _inv.c.provider_id == base.c.id)
             .outerjoin(_rc, _inv.c.resource_class_id == _rc.c.id)
             .outerjoin(usage, sa.and_(
                 usage.c.provider_id == _inv.c.provider_id,
                 usage.c.resource_class_id == _inv.c.resource_class_id))
             .order_by(base.c.name, _rc.c.name))
    if uuids is not None:
        if not uuids:
            return []
        query = query.where(base.c.uuid.in_(sorted(set(uuids))))
    found = collections.OrderedDict()
    width = len(Provider._fields)
    for row in conn.execute(query):
        provider = Provider(*row[:width])
        classes = found.setdefault(provider, {})
        if row.class_name is not None:
            inventory = capacity.Inventory(*row[width + 1:width + 7])
            classes[row.class_name] = (inventory, int(row.used))
    return list(found.items())


def subtree(conn, provider_id):
    """Ids of the provider and every provider below it."""
    found, frontier = {provider_id}, [provider_id]
    while frontier:
        rows = conn.execute(sa.select(_p.c.id).where(
            _p.c.parent_provider_id.in_(sorted(frontier))))
        frontier = [row.id for row in rows if row.id not in found]
        found.update(frontier)
    return found


def has_allocations(conn, provider_ids):
    """Whether any of the providers holds allocations."""
    query = sa.select(_alloc.c.id).where(
        _alloc.c.provider_id.in_(sorted(provider_ids))).limit(1)
    return conn.execute(query).first() is not None


def rename(conn, provider_id, name):
    conn.execute(sa.update(_p).where(_p.c.id == provider_id)
                 .values(name=name, updated_at=timeutils.utcnow()))


def move(conn, provider_id, parent_id, root_id, below, partition):
    """Hang the provider under ``parent_id`` (None: make it a root) and
    give it and ``below`` (its subtree) the root ``root_id`` and its
    ``partition``."""
    root_id = root_id if parent_id is not None else provider_id
    conn.execute(sa.update(_p).where(_p.c.id == provider_id)
                 .values(parent_provider_id=parent_id,
                         updated_at=timeutils.utcnow()))
    conn.execute(sa.update(_p).where(_p.c.id.in_(sorted(below)))
                 .values(root_provider_id=root_id, partition=partition))
