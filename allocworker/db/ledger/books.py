"""Queries that look for breaches of the books' invariants. Each returns
rows (dicts) that break one invariant; none means the invariant holds."""

import collections

import sqlalchemy as sa

from allocworker.db.limits import project_counters
from allocworker.db import schema
from allocworker import partitions

_a = schema.allocations
_c = schema.consumers
_p = schema.providers
_i = schema.inventories
_rc = schema.resource_classes
_e = schema.events
_u = schema.usages


def _summed_used():
    # SUM is a decimal on some backends; the books count whole units.
    return sa.cast(sa.func.sum(_a.c.used), sa.BigInteger).label('used')


def _rows(conn, query):
    return [dict(row._mapping) for row in conn.execute(query)]


def over_capacity(conn):
    """Usage above capacity where no forced inventory change allowed it."""
    used = (sa.select(_a.c.provider_id, _a.c.resource_class_id,
                      _summed_used())
            .group_by(_a.c.provider_id, _a.c.resource_class_id)
            .subquery('used'))
    capacity = (_i.c.total - _i.c.reserved) * _i.c.allocation_ratio
    return _rows(conn, sa.select(
        _p.c.uuid.label('provider_uuid'), _rc.c.name.label('resource_class'),
        used.c.used, capacity.label('capacity'))
        .select_from(used)
        .join(_i, sa.and_(_i.c.provider_id == used.c.provider_id,
                          _i.c.resource_class_id == used.c.resource_class_id))
        .join(_p, _p.c.id == used.c.provider_id)
        .join(_rc, _rc.c.id == used.c.resource_class_id)
        .where(used.c.used > capacity, _i.c.forced == sa.false()))


def usage_counters_off(conn):
    """Usage counter rows that differ from the sum of the allocations."""
    summed = (sa.select(_a.c.provider_id, _a.c.resource_class_id,
                        _summed_used())
              .group_by(_a.c.provider_id, _a.c.resource_class_id)
              .subquery('summed'))
    counted = sa.func.coalesce(_u.c.used, 0)
    allocated = sa.func.coalesce(summed.c.used, 0)
    return _rows(conn, sa.select(
        _p.c.uuid.label('provider_uuid'), _rc.c.name.label('resource_class'),
        counted.label('counted'), allocated.label('allocated'))
        .select_from(_u)
        .outerjoin(summed, sa.and_(
            summed.c.provider_id == _u.c.provider_id,
            summed.c.resource_class_id == _u.c.resource_class_id))
        .join(_p, _p.c.id == _u.c.provider_id)
        .join(_rc, _rc.c.id == _u.c.resource_class_id)
        .where(counted != allocated)
        .union_all(
            sa.select(_p.c.uuid, _rc.c.name, sa.literal(0),
                      summed.c.used)
            .select_from(summed)
            .outerjoin(_u, sa.and_(
                summed.c.provider_id == _u.c.provider_id,
                summed.c.resource_class_id == _u.c.resource_class_id))
            .join(_p, _p.c.id == summed.c.provider_id)
            .join(_rc, _rc.c.id == summed.c.resource_class_id)
            .where(_u.c.provider_id.is_(None))))


def project_counters_off(conn):
    """Project counters that differ from what the project's consumers
    hold: per type and class (``used``), or the number of consumers of
    a type (``consumers``)."""
    usage, consumers = project_counters.counters_off(conn)
    names = dict(conn.execute(sa.select(_rc.c.id, _rc.c.name)).all()) \
        if usage else {}
    return ([{'project_id': p, 'consumer_type': t, 'counter': 'used',
              'resource_class': names.get(c, c), 'counted': int(counted),
              'held': int(held)}
             for p, t, c, counted, held in usage] +
            [{'project_id': p, 'consumer_type': t, 'counter': 'consumers',
              'resource_class': None, 'counted': int(counted),
              'held': int(held)}
             for p, t, counted, held in consumers])


def free_counters_off(conn):
    """Inventories whose counter row is missing, or whose room left is
    not the capacity rounded down minus what is used."""
    room = (_i.c.total - _i.c.reserved) * _i.c.allocation_ratio - _u.c.used
    return _rows(conn, sa.select(
        _p.c.uuid.label('provider_uuid'), _rc.c.name.label('resource_class'),
        _u.c.free, room.label('room'))
        .select_from(_i)
        .outerjoin(_u, sa.and_(_u.c.provider_id == _i.c.provider_id,
                               _u.c.resource_class_id ==
                               _i.c.resource_class_id))
        .join(_p, _p.c.id == _i.c.provider_id)
        .join(_rc, _rc.c.id == _i.c.resource_class_id)
        .where(sa.or_(_u.c.provider_id.is_(None), _u.c.free > room,
                      _u.c.free <= room - 1)))


def allocations_without_inventory(conn):
    return _rows(conn, sa.select(
        _a.c.id.label('allocation_id'), _p.c.uuid.label('provider_uuid'),
        _rc.c.name.label('resource_class'), _a.c.used)
        .select_from(_a)
        .join(_p, _p.c.id == _a.c.provider_id)
        .join(_rc, _rc.c.id == _a.c.resource_class_id)
        .outerjoin(_i, sa.and_(_i.c.provider_id == _a.c.provider_id,
                               _i.c.resource_class_id ==
                               _a.c.resource_class_id))
        .where(_i.c.id.is_(None)))


def consumers_without_allocations(conn):
    return _rows(conn, sa.select(
        _c.c.uuid.label('consumer_uuid'), _c.c.generation)
        .select_from(_c)
        .outerjoin(_a, _a.c.consumer_id == _c.c.id)
        .where(_a.c.id.is_(None)))


def allocations_without_consumer(conn):
    return _rows(conn, sa.select(
        _a.c.id.label('allocation_id'), _a.c.consumer_id)
        .select_from(_a)
        .outerjoin(_c, _c.c.id == _a.c.consumer_id)
        .where(_c.c.id.is_(None)))


def held_events_past_window(conn, now):
    return _rows(conn, sa.select(
        _e.c.consumer_uuid, _e.c.name, _e.c.tag, _e.c.held_until)
        .where(_e.c.held_until < now))


def consumers_across_partitions(conn):
    """Consumers holding allocations on providers of two partitions or
    more, ``shared`` aside (written before the partitions were judged,
    or under a tree split across partitions): one row each, naming
    them."""
    own = (sa.select(_a.c.consumer_id, _p.c.partition).distinct()
           .select_from(_a).join(_p, _p.c.id == _a.c.provider_id)
           .where(_p.c.partition != partitions.SHARED).subquery('own'))
    spanning = (sa.select(own.c.consumer_id).group_by(own.c.consumer_id)
                .having(sa.func.count() > 1))
    found = collections.defaultdict(list)
    for uuid, partition in conn.execute(
            sa.select(_c.c.uuid, own.c.partition)
            .select_from(_c).join(own, own.c.consumer_id == _c.c.id)
            .where(own.c.consumer_id.in_(spanning))
            .order_by(_c.c.uuid, own.c.partition)):
        found[uuid].append(partition)
    return [{'consumer_uuid': uuid, 'partitions': found[uuid]}
            for uuid in sorted(found)]


def trees_across_partitions(conn):
    """Providers lying in another partition than their root (a worker
    of the release before partitions creates a child in ``default``
    whatever its parent's): a tree lies in one partition."""
    root = _p.alias('root')
    return _rows(conn, sa.select(
        root.c.uuid.label('root_uuid'),
        root.c.partition.label('root_partition'),
        _p.c.uuid.label('provider_uuid'), _p.c.partition)
        .select_from(_p).join(root, root.c.id == _p.c.root_provider_id)
        .where(_p.c.partition != root.c.partition)
        .order_by(root.c.uuid, _p.c.uuid))
