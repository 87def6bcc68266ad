"""The domains of topology level ``partition`` (group rules, design §3):
a root's domain is its partition (``providers.partition``), with no
aggregate involved, and partition ``shared`` is no domain. The reads a
judgement makes of an aggregate level (db/grouping/topology.py), with the same
signatures, so the judge asks either alike; a root's label itself is
read beside the other levels' (``db_topology.labels_of_roots``).

Providers of ``shared`` serve every partition: a class one of them
offers counts as offered by every partition's roots (a spread rule's
eligible domains).
"""

import functools

import sqlalchemy as sa

from allocworker.db.grouping import topology as db_topology
from allocworker.db import prepared
from allocworker.db import schema
from allocworker import partitions

_p = schema.providers
_i = schema.inventories


def _partitions(dialect):
    """A select of the name of each partition holding providers, but
    ``shared``. On PostgreSQL a loose index scan of (partition, name),
    one index step per partition, because DISTINCT reads every provider
    (a claim into a group asks it); MySQL and MariaDB skip through the
    index for DISTINCT themselves, and SQLite serves small clouds."""
    if dialect != 'postgresql':
        found = sa.select(_p.c.partition.label('name')).distinct() \
            .subquery('partitions')
    else:
        first = sa.select(sa.func.min(_p.c.partition).label('name')) \
            .cte('partitions', recursive=True)
        following = (sa.select(sa.func.min(_p.c.partition))
                     .where(_p.c.partition > first.c.name)
                     .scalar_subquery())
        found = first.union_all(
            sa.select(following).where(first.c.name.isnot(None)))
    return (sa.select(found.c.name)
            .where(found.c.name.isnot(None),
                   found.c.name != partitions.SHARED))


def all_labels(conn, names):
    """{level name: {partition}}: every partition holding providers,
    ``shared`` aside."""
    every = {name for name, in conn.execute(
        _partitions(conn.dialect.name))}
    return {name: set(every) for name in names}


def _in_shared(class_id):
    """Condition: a provider of ``shared`` offers the class (not
    correlated: the database answers it once per statement)."""
    return (sa.select(sa.literal(1)).select_from(_p)
            .join(_i, _i.c.provider_id == _p.c.id)
            .where(_p.c.partition == partitions.SHARED,
                   _i.c.resource_class_id == class_id)
            .limit(1).scalar_subquery().isnot(None))


def _offers(root, class_ids):
    """Conditions: every class is offered by the tree of ``root`` (an id
    column) or by ``shared``, each stopping at the first provider."""
    return [sa.or_(_in_shared(class_id), tree)
            for class_id, tree in zip(
                class_ids, db_topology.offering(root, class_ids))]


def eligible_labels(conn, name, class_ids, excluding=(), limit=None):
    """The partitions holding a root whose tree offers every class of
    ``class_ids`` (inventory of it, used or not; or ``shared`` offers
    it), but for those ``excluding``; at most ``limit`` of them. Each
    partition stops at its first such root."""
    class_ids = sorted(class_ids)
    statement = _eligible(conn.dialect.name, len(class_ids))
    params = {'excluding': sorted(excluding) or [''],
              'count': limit if limit is not None else 1 << 30}
    params.update(('class_%d' % n, c) for n, c in enumerate(class_ids))
    return {label for label, in statement.execute(conn, params)}


@functools.lru_cache(maxsize=16)
def _eligible(dialect, classes):
    domain = _partitions(dialect).subquery('domain')
    root = _p.alias('partition_root')
    first_root = (sa.select(root.c.id)
                  .where(root.c.partition == domain.c.name,
                         root.c.id == root.c.root_provider_id,
                         *_offers(root.c.id, [
                             sa.bindparam('class_%d' % n, type_=sa.Integer)
                             for n in range(classes)]))
                  .limit(1).scalar_subquery())
    return prepared.Core(
        sa.select(domain.c.name)
        .where(sa.not_(prepared.in_list(domain.c.name, 'excluding',
                                        sa.String, dialect)),
               first_root.isnot(None))
        .limit(sa.bindparam('count', type_=sa.Integer)))


def offering_roots(conn, class_ids, within):
    """The roots of ``within`` (ids) whose trees offer every class of
    ``class_ids``, a class ``shared`` offers counting as offered by
    every tree."""
    if not within:
        return set()
    r = _p.alias('offering_root')
    return {root for root, in conn.execute(
        sa.select(r.c.id).where(r.c.id.in_(sorted(within)),
                                r.c.id == r.c.root_provider_id,
                                *_offers(r.c.id, sorted(class_ids))))}


def roots_in(conn, name, labels, limit):
    """The ids of the roots in the partitions ``labels``, or None when
    there are more than ``limit``."""
    labels = set(labels) - {partitions.SHARED}
    if not labels:
        return frozenset()
    query = (sa.select(_p.c.id)
             .where(_p.c.partition.in_(sorted(labels)),
                    _p.c.id == _p.c.root_provider_id)
             .limit(limit + 1))
    found = frozenset(root for root, in conn.execute(query))
    return None if len(found) > limit else found


def root_counts(conn):
    """{partition: number of roots lying there}, ``shared`` aside."""
    query = (sa.select(_p.c.partition, sa.func.count())
             .where(_p.c.id == _p.c.root_provider_id,
                    _p.c.partition != partitions.SHARED)
             .group_by(_p.c.partition))
    return dict(conn.execute(query).all())
