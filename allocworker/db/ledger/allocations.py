"""Queries on consumers and their allocations."""

import collections

from oslo_utils import timeutils
import sqlalchemy as sa

from allocworker.db import api
from allocworker.db.catalog import providers
from allocworker.db import events
from allocworker.db import generations
from allocworker.db.ledger import writes_pg
from allocworker.db.limits import project_counters
from allocworker.db import prepared
from allocworker.db import schema

_c = schema.consumers
_alloc = schema.allocations
_p = schema.providers
_rc = schema.resource_classes

Consumer = collections.namedtuple(
    'Consumer', ['id', 'uuid', 'project_id', 'user_id', 'consumer_type',
                 'generation'])

# A consumer written through Placement's API before microversion 1.38 has
# no type; the column keeps NOT NULL and stores that as ''.
_UNTYPED = ''


def _consumer(row):
    consumer = Consumer(*row)
    if consumer.consumer_type == _UNTYPED:
        return consumer._replace(consumer_type=None)
    return consumer


_CONSUMER_COLUMNS = [_c.c.id, _c.c.uuid, _c.c.project_id, _c.c.user_id,
                     _c.c.consumer_type, _c.c.generation]


# The hot path's statements are built once, with their lists as
# expanding parameters: each call only binds values, and SQLAlchemy's
# compiled cache finds the statement by identity of shape.
_LOCK_CONSUMERS = api.for_update(
    sa.select(*_CONSUMER_COLUMNS)
    .where(_c.c.uuid.in_(sa.bindparam('uuids', expanding=True)))
    .order_by(_c.c.uuid))
_ROWS_OF = (sa.select(_alloc.c.consumer_id, _alloc.c.provider_id,
                      _rc.c.name, _alloc.c.used)
            .join(_rc, _alloc.c.resource_class_id == _rc.c.id)
            .where(_alloc.c.consumer_id.in_(
                sa.bindparam('ids', expanding=True))))
_DELETE_ROWS = sa.delete(_alloc).where(_alloc.c.consumer_id.in_(
    sa.bindparam('ids', expanding=True)))


def lock_consumers(conn, uuids):
    """Lock the consumers that exist, in uuid order; {uuid: Consumer}."""
    if not uuids:
        return {}
    rows = conn.execute(_LOCK_CONSUMERS, {'uuids': sorted(uuids)})
    return {row.uuid: _consumer(row) for row in rows}


def rows_of(conn, consumer_ids):
    """{consumer_id: {(provider_id, class_name): used}}."""
    if not consumer_ids:
        return {}
    found = collections.defaultdict(dict)
    for consumer_id, provider_id, name, used in conn.execute(
            _ROWS_OF, {'ids': sorted(consumer_ids)}):
        found[consumer_id][(provider_id, name)] = used
    return found


def delete_rows(conn, consumer_ids):
    if consumer_ids:
        conn.execute(_DELETE_ROWS, {'ids': sorted(consumer_ids)})


_INSERT_ROWS = sa.insert(_alloc)


def insert_rows(conn, rows, now):
    """rows: [(consumer_id, provider_id, class_id, used)]."""
    if rows:
        conn.execute(_INSERT_ROWS, [
            {'consumer_id': c, 'provider_id': p, 'resource_class_id': rc,
             'used': used, 'created_at': now} for c, p, rc, used in rows])


_INSERT_CONSUMERS = sa.insert(_c).returning(_c.c.uuid, _c.c.id,
                                            sort_by_parameter_order=True)


def create_consumers(conn, consumers, now):
    """consumers: [(uuid, project_id, user_id, consumer_type)], inserted
    in one statement; {uuid: (id, generation)}."""
    if not consumers:
        return {}
    first = generations.first(conn, generations.CONSUMER,
                              [c[0] for c in consumers])
    rows = conn.execute(_INSERT_CONSUMERS, [
        {'uuid': u, 'project_id': p, 'user_id': us,
         'consumer_type': t, 'generation': first[u], 'created_at': now}
        for u, p, us, t in consumers])
    return {uuid: (consumer_id, first[uuid]) for uuid, consumer_id in rows}


def update_consumers(conn, changes, now):
    """changes: [(id, expected_generation, project_id, user_id, type)].

    Compare-and-swap every generation up by one, one statement per
    distinct set of fields; False when someone else moved one of them."""
    groups = collections.defaultdict(list)
    for consumer_id, expected, project_id, user_id, kind in changes:
        groups[(project_id, user_id, kind)].append((consumer_id, expected))
    for (project_id, user_id, kind), pairs in groups.items():
        result = conn.execute(
            sa.update(_c)
            .where(sa.tuple_(_c.c.id, _c.c.generation).in_(pairs))
            .values(generation=_c.c.generation + 1, updated_at=now,
                    project_id=project_id, user_id=user_id,
                    consumer_type=kind))
        if result.rowcount != len(pairs):
            return False
    return True


def delete_consumers(conn, consumers):
    """Delete these Consumers (locked), retiring their generations."""
    if consumers:
        conn.execute(sa.delete(_c).where(
            _c.c.id.in_(sorted(c.id for c in consumers))))
        generations.retire(conn, generations.CONSUMER,
                           {c.uuid: c.generation for c in consumers})


# Every write of one allocation transaction, handed over at once so each
# backend can send it in as few statements as it can:
# replaced: ids of existing consumers whose allocation rows go;
# updated: [(uuid, id, expected_generation, project_id, user_id, type)];
# created: [(uuid, project_id, user_id, type)]; emptied: [Consumer];
# rows: [(consumer_uuid, provider_id, class_id, used)];
# usage: {(provider_id, class_id): delta}; bumps: {provider_id: generation
# seen}, compare-and-swapped up by one; project_usage: {(project_id,
# type, class_id): delta}; project_consumers: {(project_id, type): delta}.
WriteSet = collections.namedtuple(
    'WriteSet', ['replaced', 'updated', 'created', 'emptied', 'rows',
                 'usage', 'bumps', 'project_usage', 'project_consumers'])


def _stored(kind):
    return _UNTYPED if kind is None else kind


def write_set(conn, writes):
    """Write ``writes``; {uuid: (id, generation)} of the consumers that
    now hold allocations (created, or updated one generation up).

    Raises api.ConcurrentUpdate when a consumer or provider generation
    moved since it was locked and read. Consumer types are stored as
    given ('' for None is done here)."""
    now = timeutils.utcnow()
    project_usage = collections.Counter()
    for (project, kind, class_id), d in writes.project_usage.items():
        project_usage[(project, _stored(kind), class_id)] += d
    project_consumers = collections.Counter()
    for (project, kind), d in writes.project_consumers.items():
        project_consumers[(project, _stored(kind))] += d
    # Moves of the projects this transaction holds locked go to their
    # lock rows, the rest to the shard rows (``project_counters``).
    project_usage, project_consumers, counts = project_counters.split(
        conn, {key: d for key, d in project_usage.items() if d},
        {key: d for key, d in project_consumers.items() if d})
    writes = writes._replace(
        updated=[u[:5] + (_stored(u[5]),) for u in writes.updated],
        created=[n[:3] + (_stored(n[3]),) for n in writes.created],
        usage={key: d for key, d in writes.usage.items() if d},
        project_usage=project_usage, project_consumers=project_consumers)
    shard = project_counters.shard(conn)
    if prepared.applies(conn.dialect):
        held, consumers_moved, providers_moved = writes_pg.write_set(
            conn, writes, now, shard, counts)
        if consumers_moved != len(writes.updated):
            raise api.ConcurrentUpdate('consumer')
        if providers_moved != len(writes.bumps):
            raise api.ConcurrentUpdate('provider')
    else:
        held = _write_each(conn, writes, now, shard, counts)
    held.update((u[0], (u[1], u[2] + 1)) for u in writes.updated)
    return held


def move_usage(conn, usage):
    """Move the usage counters {(provider_id, class_id): delta} in one
    statement, ahead of the rest of a write (a claim's, held back by
    ``allocations.staging``): what later reads of the transaction judge
    and weigh by."""
    usage = {key: d for key, d in usage.items() if d}
    if not usage:
        return
    if prepared.applies(conn.dialect):
        writes_pg.move_usage(conn, usage)
    else:
        providers.add_usage(conn, usage)


def _write_each(conn, writes, now, shard, counts):
    """``write_set`` one statement (or executemany) per kind of write."""
    delete_rows(conn, writes.replaced)
    if not update_consumers(conn, [u[1:] for u in writes.updated], now):
        raise api.ConcurrentUpdate('consumer')
    held = create_consumers(conn, writes.created, now)
    delete_consumers(conn, writes.emptied)
    providers.add_usage(conn, writes.usage)
    project_counters.add(conn, writes.project_usage,
                         writes.project_consumers, shard)
    project_counters.set_counts(conn, counts)
    ids = dict(held)
    ids.update((u[0], (u[1],)) for u in writes.updated)
    insert_rows(conn, [(ids[uuid][0], pid, class_id, used)
                       for uuid, pid, class_id, used in writes.rows], now)
    # Events held for consumers that just appeared now count.
    events.release_held(conn, [n[0] for n in writes.created], now)
    if not providers.bump_generations(conn, writes.bumps, now):
        raise api.ConcurrentUpdate('provider')
    return held


def _described(rows):
    """Fold consumer x allocation rows into {uuid: (Consumer,
    {provider_uuid: ({class: used}, provider_generation)}, {partition of
    those providers})}."""
    found = collections.OrderedDict()
    width = len(Consumer._fields)
    for row in rows:
        consumer = _consumer(row[:width])
        _, allocs, partitions = found.setdefault(
            consumer.uuid, (consumer, {}, set()))
        if row.provider_uuid is not None:
            resources, _gen = allocs.setdefault(
                row.provider_uuid, ({}, row.provider_generation))
            resources[row.class_name] = int(row.used)
            partitions.add(row.provider_partition)
    return found


def _describe_query():
    return (sa.select(*_CONSUMER_COLUMNS,
                      _p.c.uuid.label('provider_uuid'),
                      _p.c.generation.label('provider_generation'),
                      _rc.c.name.label('class_name'), _alloc.c.used,
                      _p.c.partition.label('provider_partition'))
            .select_from(_c)
            .join(_alloc, _alloc.c.consumer_id == _c.c.id)
            .join(_p, _alloc.c.provider_id == _p.c.id)
            .join(_rc, _alloc.c.resource_class_id == _rc.c.id))


_DESCRIBE = _describe_query().where(
    _c.c.uuid.in_(sa.bindparam('uuids', expanding=True)))


# PostgreSQL: the same read, prepared once per connection (planning it
# cost up to 2 ms after a burst of inserts, running it 0.1 ms). A generic
# plan cannot know how many uuids come, and joined by scanning every
# allocation; the allocations subquery is kept apart (``OFFSET 0``) and
# bound to its consumer, so a consumer's rows are found through their
# index whatever the plan (the lookup of ``_DESCRIBE``, written for
# PostgreSQL).
_DESCRIBE_PG = prepared.Statement('allocworker_describe', """
SELECT c.id, c.uuid, c.project_id, c.user_id, c.consumer_type,
       c.generation, p.uuid AS provider_uuid,
       p.generation AS provider_generation, rc.name AS class_name, a.used,
       p.partition AS provider_partition
FROM consumers AS c
CROSS JOIN LATERAL (
    SELECT provider_id, resource_class_id, used FROM allocations
    WHERE consumer_id = c.id OFFSET 0) AS a
JOIN providers AS p ON p.id = a.provider_id
JOIN resource_classes AS rc ON rc.id = a.resource_class_id
WHERE c.uuid = ANY(%(uuids)s::text[])
""")


def describe(conn, uuids):
    """Consumers with their allocations, in one statement (one snapshot)."""
    if not uuids:
        return {}
    uuids = sorted(set(uuids))
    if prepared.applies(conn.dialect):
        return _described(_DESCRIBE_PG.execute(conn, {'uuids': uuids}))
    return _described(conn.execute(_DESCRIBE, {'uuids': uuids}))


def on_provider(conn, provider_uuid):
    """(the provider's partition, or None when it does not exist,
    [(Consumer, {class: used})]) in one statement.

    The provider row is outer-joined so that its absence and an empty
    listing are told apart without a second read."""
    inner = (sa.select(_alloc.c.provider_id, _alloc.c.used,
                       _rc.c.name.label('class_name'), *_CONSUMER_COLUMNS)
             .join(_rc, _alloc.c.resource_class_id == _rc.c.id)
             .join(_c, _alloc.c.consumer_id == _c.c.id)
             .subquery('held'))
    query = (sa.select(_p.c.partition,
                       *[inner.c[col.name] for col in _CONSUMER_COLUMNS],
                       inner.c.class_name, inner.c.used)
             .select_from(_p)
             .outerjoin(inner, inner.c.provider_id == _p.c.id)
             .where(_p.c.uuid == provider_uuid)
             .order_by(inner.c.uuid, inner.c.class_name))
    rows = conn.execute(query).all()
    if not rows:
        return None, []
    found = collections.OrderedDict()
    for row in rows:
        if row.uuid is None:
            continue
        consumer = Consumer(*row[1:1 + len(Consumer._fields)])
        found.setdefault(consumer, {})[row.class_name] = int(row.used)
    return rows[0].partition, list(found.items())


def page(conn, project_id=None, limit=1000, marker=None, partitions=None):
    """Consumers ordered by uuid, after ``marker``, holding allocations
    only in ``partitions`` when given; one statement."""
    query = sa.select(*_CONSUMER_COLUMNS).order_by(_c.c.uuid).limit(limit)
    if partitions is not None:
        query = query.where(~_held_beyond(_c.c.id, partitions))
    if project_id is not None:
        query = query.where(_c.c.project_id == project_id)
    if marker is not None:
        query = query.where(_c.c.uuid > marker)
    return [_consumer(row) for row in conn.execute(query)]


def _held_beyond(consumer_id, partitions):
    """The consumer in ``consumer_id`` holds an allocation on a provider
    outside ``partitions``."""
    # Aliases: the outer query may read allocations and providers too,
    # which these must not correlate to.
    held, provider = _alloc.alias('held'), _p.alias('held_on')
    return sa.exists().where(
        held.c.consumer_id == consumer_id,
        held.c.provider_id.in_(sa.select(provider.c.id).where(
            provider.c.partition.not_in(sorted(partitions)))))


def project_usage(conn, project_id, user_id=None, partitions=None):
    """What a project's (and user's) consumers hold, by consumer type:
    {consumer_type: ({class: used}, consumer_count)}; only consumers
    holding allocations in ``partitions`` alone when given."""
    query = (sa.select(_c.c.consumer_type, _rc.c.name,
                       sa.func.sum(_alloc.c.used))
             .select_from(_c)
             .join(_alloc, _alloc.c.consumer_id == _c.c.id)
             .join(_rc, _alloc.c.resource_class_id == _rc.c.id)
             .where(_c.c.project_id == project_id)
             .group_by(_c.c.consumer_type, _rc.c.name))
    if user_id is not None:
        query = query.where(_c.c.user_id == user_id)
    counts = (sa.select(_c.c.consumer_type, sa.func.count())
              .where(_c.c.project_id == project_id)
              .group_by(_c.c.consumer_type))
    if user_id is not None:
        counts = counts.where(_c.c.user_id == user_id)
    if partitions is not None:
        beyond = _held_beyond(_c.c.id, partitions)
        query, counts = query.where(~beyond), counts.where(~beyond)
    found = {}
    for kind, count in conn.execute(counts):
        found[kind or None] = ({}, int(count))
    for kind, name, used in conn.execute(query):
        found[kind or None][0][name] = int(used)
    return found
