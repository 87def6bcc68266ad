"""The one partition a ``placement import --partition P`` pass writes:
what P holds, which of Placement's uuids other partitions hold already,
and P's books replaced (``--force``), so that a pass never takes
another partition's books for its own nor touches them.

A consumer has no partition column: it lives in the partition of the
providers its allocations are on, ``shared`` aside (partitions.py), so
"P's consumers" are read through their allocations. Every function runs
inside the caller's one write transaction.
"""

import sqlalchemy as sa

from allocworker.db.catalog import providers as db_providers
from allocworker.db import generations
from allocworker.db import schema
from allocworker import partitions

_p = schema.providers
_c = schema.consumers
_a = schema.allocations

# Ids or uuids per statement: SQLite binds at most 32,766 values.
CHUNK = 1000


def chunks(values, size=CHUNK):
    values = sorted(values)
    for start in range(0, len(values), size):
        yield values[start:start + size]


def _holding(where):
    """Ids of consumers with an allocation on a provider ``where``
    (called with the aliases), over aliases of their own: as a subquery
    of a statement on ``allocations`` or ``providers`` it must not be
    correlated with the outer tables."""
    a, p = _a.alias(), _p.alias()
    return (sa.select(a.c.consumer_id)
            .join(p, p.c.id == a.c.provider_id).where(where(p)))


def consumer_ids(partition):
    """A SELECT of the ids of the consumers living in ``partition``."""
    if partition != partitions.SHARED:
        return _holding(lambda p: p.c.partition == partition)
    # One on ``shared`` providers only lives in ``shared``; one that
    # also holds some elsewhere lives there.
    on_shared = _holding(lambda p: p.c.partition == partitions.SHARED)
    return on_shared.where(on_shared.selected_columns[0].not_in(
        _holding(lambda p: p.c.partition != partitions.SHARED)))


def held(conn, partition):
    """How many providers lie in ``partition`` and consumers live there."""
    return {
        'providers': conn.execute(
            sa.select(sa.func.count()).select_from(_p)
            .where(_p.c.partition == partition)).scalar(),
        'consumers': conn.execute(
            sa.select(sa.func.count()).select_from(_c)
            .where(_c.c.id.in_(consumer_ids(partition)))).scalar()}


def consumers_elsewhere(conn, partition):
    """Whether any consumer lives outside ``partition``."""
    return conn.execute(sa.select(sa.func.count()).select_from(_c)
                        .where(_c.c.id.not_in(consumer_ids(partition)))
                        ).scalar() > 0


def last_change(conn, partition):
    """The latest created_at/updated_at of ``partition``'s providers and
    consumers (the import copies Placement's own), or None."""
    latest = None
    for table, where in ((_p, _p.c.partition == partition),
                         (_c, _c.c.id.in_(consumer_ids(partition)))):
        found = conn.execute(sa.select(sa.func.max(sa.func.coalesce(
            table.c.updated_at, table.c.created_at))).where(where)).scalar()
        if found is not None and (latest is None or found > latest):
            latest = found
    return latest


def provider_uuids(conn, partition):
    """{uuid} of the providers lying in ``partition``."""
    return {row[0] for row in conn.execute(
        sa.select(_p.c.uuid).where(_p.c.partition == partition))}


def consumer_uuids(conn, partition):
    """{uuid} of the consumers living in ``partition``."""
    return {row[0] for row in conn.execute(
        sa.select(_c.c.uuid).where(_c.c.id.in_(consumer_ids(partition))))}


def projects(conn, partition):
    """{project_id} of the consumers living in ``partition``."""
    return {row[0] for row in conn.execute(
        sa.select(_c.c.project_id).distinct()
        .where(_c.c.id.in_(consumer_ids(partition))))}


def foreign_providers(conn, uuids, partition):
    """{uuid: (partition, name)} of those of ``uuids`` that providers
    of other partitions have."""
    found = {}
    for chunk in chunks(uuids):
        found.update((u, (p, n)) for u, p, n in conn.execute(
            sa.select(_p.c.uuid, _p.c.partition, _p.c.name)
            .where(_p.c.uuid.in_(chunk), _p.c.partition != partition)))
    return found


def foreign_consumers(conn, uuids, partition):
    """{uuid: partition it lives in, or None (no allocations, or split
    across partitions: the audit reports those)} of those of ``uuids``
    held here by consumers not living in ``partition``. One indexed
    read per chunk when none is held (the usual case); the partitions
    are read only for those that are."""
    found = {}
    for chunk in chunks(uuids):
        ids = dict(conn.execute(sa.select(_c.c.id, _c.c.uuid)
                                .where(_c.c.uuid.in_(chunk))).all())
        if not ids:
            continue
        lying = {}
        for consumer_id, where in conn.execute(
                sa.select(_a.c.consumer_id, _p.c.partition).distinct()
                .join(_p, _p.c.id == _a.c.provider_id)
                .where(_a.c.consumer_id.in_(sorted(ids)))):
            lying.setdefault(consumer_id, set()).add(where)
        for consumer_id, uuid in ids.items():
            lives = partitions.lives_in(lying.get(consumer_id, set()))
            if lives != partition:
                found[uuid] = lives
    return found


def strangers(conn, partition):
    """How many consumers living elsewhere hold allocations on
    ``partition``'s providers (only ``shared``'s can have any)."""
    return conn.execute(
        sa.select(sa.func.count(sa.distinct(_a.c.consumer_id)))
        .join(_p, _p.c.id == _a.c.provider_id)
        .where(_p.c.partition == partition,
               _a.c.consumer_id.not_in(consumer_ids(partition)))).scalar()


def clear(conn, partition):
    """Remove ``partition``'s providers and the consumers living there
    with what hangs on them, retiring their generations as any delete
    does. Other partitions' rows stay, but for the usage counters of
    ``shared`` providers, lowered by what those consumers held there.
    (The caller refuses while ``strangers`` holds any.)"""
    doomed = conn.execute(sa.select(_c.c.id, _c.c.uuid, _c.c.generation)
                          .where(_c.c.id.in_(consumer_ids(partition)))).all()
    own = sa.select(_p.c.id).where(_p.c.partition == partition)
    elsewhere = {}
    for chunk in chunks(row[0] for row in doomed):
        for provider_id, class_id, used in conn.execute(
                sa.select(_a.c.provider_id, _a.c.resource_class_id,
                          sa.func.sum(_a.c.used))
                .where(_a.c.consumer_id.in_(chunk),
                       _a.c.provider_id.not_in(own))
                .group_by(_a.c.provider_id, _a.c.resource_class_id)):
            key = (provider_id, class_id)
            elsewhere[key] = elsewhere.get(key, 0) - int(used)
        conn.execute(sa.delete(_a).where(_a.c.consumer_id.in_(chunk)))
        conn.execute(sa.delete(_c).where(_c.c.id.in_(chunk)))
    db_providers.add_usage(conn, elsewhere)
    _retire(conn, generations.CONSUMER,
            {uuid: generation for _i, uuid, generation in doomed})
    gone = dict(conn.execute(sa.select(_p.c.uuid, _p.c.generation)
                             .where(_p.c.partition == partition)).all())
    for table in (schema.usages, schema.inventories, schema.provider_traits,
                  schema.provider_aggregates):
        conn.execute(sa.delete(table).where(table.c.provider_id.in_(own)))
    # InnoDB refuses to delete a row whose foreign key points at another
    # row of the same statement's set.
    conn.execute(sa.update(_p).where(_p.c.partition == partition)
                 .values(parent_provider_id=None, root_provider_id=None))
    conn.execute(sa.delete(_p).where(_p.c.partition == partition))
    _retire(conn, generations.PROVIDER, gone)


def _retire(conn, kind, found):
    for chunk in chunks(found):
        generations.retire(conn, kind, {u: found[u] for u in chunk})
