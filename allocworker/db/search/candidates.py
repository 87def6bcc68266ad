"""Queries for allocation candidates and provider searches: the
filtering is done here, in SQL (``db/search/filters.py``), so a request
never reads every provider.
"""

import collections
import functools

import sqlalchemy as sa

from allocworker import capacity
from allocworker.db import prepared
from allocworker.db import schema
from allocworker.db.search import filters as db_filters
from allocworker.db.search import suppliers as db_suppliers

_p = schema.providers
_inv = schema.inventories
_u = schema.usages
_rc = schema.resource_classes
_pt = schema.provider_traits
_t = schema.traits
_pa = schema.provider_aggregates

Node = collections.namedtuple('Node', ['id', 'uuid', 'parent_id', 'root_id'])


def roots(conn, after=None, count=None, before=None, required=(),
          forbidden=(), only=None, partitions=None):
    """Root provider ids in id order: above ``after``, below ``before``,
    at most ``count``, carrying every trait id of ``required`` and none
    of ``forbidden``, within ``only`` and lying in ``partitions`` when
    they are given (then read from the partitions' index of trees: a
    root is its own root)."""
    key = _p.c.id if partitions is None else _p.c.root_provider_id
    query = (sa.select(_p.c.id).where(_p.c.parent_provider_id.is_(None))
             .order_by(key))
    if after is not None:
        query = query.where(key > after)
    if before is not None:
        query = query.where(key < before)
    if only is not None:
        query = query.where(prepared.one_of(_p.c.id, only, sa.Integer,
                                            conn.dialect.name))
    if partitions is not None:
        query = query.where(_p.c.partition.in_(sorted(partitions)))
    query = query.where(*db_filters.trait_clauses(
        _p.c.id, db_filters.Filters(required, (), forbidden, (), ()),
        conn.dialect.name))
    if count is not None:
        query = query.limit(count)
    return [row[0] for row in conn.execute(query)]


def count_roots(conn, lowest, highest):
    """How many root providers have ids from ``lowest`` to ``highest``."""
    return conn.execute(sa.select(sa.func.count()).select_from(_p).where(
        _p.c.parent_provider_id.is_(None),
        _p.c.id.between(lowest, highest))).scalar()


def range_pays(conn, ids):
    """Whether reading the roots ``ids`` (sorted) by their id range (one
    index range; the rows of other roots in it read, then dropped) costs
    less than by list: when the range holds at most twice as many roots.
    Counted only when the range's width leaves it open: one at most
    twice as wide as the list holds no more roots than that (an id is
    one provider); in one more than 16 times as wide (a filtered list
    scattered over the cloud: 100 roots of 10,000) the ids between are
    either other roots, many times the list, or providers of the
    listed roots' big trees, which a list reads alike. Counting such a
    range walked all of it (1.4-1.8 ms for 10,000 roots) to pick the
    list."""
    span, size = ids[-1] - ids[0] + 1, len(ids)
    if span <= 2 * size:
        return True
    if span > 16 * size:
        return False
    return count_roots(conn, ids[0], ids[-1]) <= 2 * size


def root_id_range(conn):
    row = conn.execute(sa.select(sa.func.min(_p.c.id), sa.func.max(_p.c.id))
                       .where(_p.c.parent_provider_id.is_(None))).first()
    return row if row and row[0] is not None else None


def node(conn, uuid):
    row = conn.execute(sa.select(_p.c.id, _p.c.uuid, _p.c.parent_provider_id,
                                 _p.c.root_provider_id)
                       .where(_p.c.uuid == uuid)).first()
    return Node(*row) if row else None


def nodes(conn, root_ids=(), provider_ids=()):
    """{id: Node} of every provider in the trees of ``root_ids`` and of
    ``provider_ids``."""
    return nodes_carrying(conn, root_ids, provider_ids)[0]


def nodes_carrying(conn, root_ids=(), provider_ids=(), trait_id=None):
    """(``nodes``' {id: Node}, the ids of those that carry ``trait_id``:
    read in the same statement, none when it is None)."""
    if not root_ids and not provider_ids:
        return {}, set()
    bound = {} if trait_id is None else {'trait': trait_id}
    if root_ids:
        bound['roots'] = sorted(set(root_ids))
    if provider_ids:
        bound['ids'] = sorted(set(provider_ids))
    rows = _nodes_query(conn.dialect.name, 'roots' in bound, 'ids' in bound,
                        'trait' in bound).execute(conn, bound)
    found, carrying = {}, set()
    for row in rows:
        found[row[0]] = Node(*row[:4])
        if trait_id is not None and row[4]:
            carrying.add(row[0])
    return found, carrying


@functools.lru_cache(maxsize=16)
def _nodes_query(dialect, with_roots, with_ids, with_trait=False):
    """Built once (a claim reads its window's trees with it), planned
    for its values."""
    clauses = []
    if with_roots:
        clauses.append(prepared.any_of(_p.c.root_provider_id, 'roots',
                                       sa.Integer, dialect))
    if with_ids:
        clauses.append(prepared.any_of(_p.c.id, 'ids', sa.Integer, dialect))
    columns = [_p.c.id, _p.c.uuid, _p.c.parent_provider_id,
               _p.c.root_provider_id]
    if with_trait:
        columns.append(sa.exists().where(
            _pt.c.provider_id == _p.c.id,
            _pt.c.trait_id == sa.bindparam('trait', type_=sa.Integer)))
    return prepared.Core(sa.select(*columns).where(sa.or_(*clauses)),
                         prepare=False)


def nodes_by_uuid(conn, uuids):
    rows = conn.execute(sa.select(_p.c.id, _p.c.uuid, _p.c.parent_provider_id,
                                  _p.c.root_provider_id)
                        .where(prepared.one_of(_p.c.uuid, uuids, sa.String,
                                               conn.dialect.name)))
    return [Node(*row) for row in rows]


def traits(conn, provider_ids):
    """{provider id: [trait names]}."""
    found = collections.defaultdict(list)
    if not provider_ids:
        return found
    # In trait id order, as Placement lists them (standard traits first).
    rows = conn.execute(sa.select(_pt.c.provider_id, _t.c.name)
                        .join(_t, _t.c.id == _pt.c.trait_id)
                        .where(prepared.one_of(_pt.c.provider_id,
                                               provider_ids, sa.Integer,
                                               conn.dialect.name))
                        .order_by(_t.c.id))
    for provider_id, name in rows:
        found[provider_id].append(name)
    return found


def inventories(conn, provider_ids):
    """{provider id: {class name: (Inventory, used)}}."""
    found = collections.defaultdict(dict)
    if not provider_ids:
        return found
    few = len(provider_ids) <= db_suppliers.FEW_ROOTS
    rows = _inventories_query(conn.dialect.name, few).execute(
        conn, {'ids': sorted(provider_ids)})
    for row in rows:
        found[row[0]][row[1]] = (capacity.Inventory(*row[2:8]), int(row[8]))
    return found


@functools.lru_cache(maxsize=8)
def _inventories_query(dialect, few):
    """Prepared on PostgreSQL for a ``few`` providers (a claim's
    weighing: planning cost the server 0.26-0.34 ms); for many (a long
    list of candidates), planned for them. The usages are bound to the
    list as well: PostgreSQL carries no ``ANY`` across a join, and
    hashed every usage counter of the cloud to join a hundred providers'
    (7.5 ms on 10,000 hosts, 0.5 bound)."""
    listed = prepared.in_list if few else prepared.any_of
    return prepared.Core(
        sa.select(_inv.c.provider_id, _rc.c.name, _inv.c.total,
                  _inv.c.reserved, _inv.c.min_unit, _inv.c.max_unit,
                  _inv.c.step_size, _inv.c.allocation_ratio,
                  sa.func.coalesce(_u.c.used, 0))
        .join(_rc, _rc.c.id == _inv.c.resource_class_id)
        .outerjoin(_u, sa.and_(
            _u.c.provider_id == _inv.c.provider_id,
            _u.c.resource_class_id == _inv.c.resource_class_id,
            listed(_u.c.provider_id, 'ids', sa.Integer, dialect)))
        .where(listed(_inv.c.provider_id, 'ids', sa.Integer, dialect)),
        prepare=few)


def has_nesting(conn):
    """Whether any provider has a parent."""
    return conn.execute(sa.select(_p.c.id).where(
        _p.c.parent_provider_id.isnot(None)).limit(1)).first() is not None


def sharing_anchors(conn, root_id, sharing_trait):
    """Roots that sharing providers of the tree of ``root_id`` anchor at
    through their aggregates."""
    shared = _p.alias('shared')
    own = _pa.alias('own')
    theirs = _pa.alias('theirs')
    member = _p.alias('member')
    query = (sa.select(member.c.root_provider_id).distinct()
             .select_from(shared)
             .join(own, own.c.provider_id == shared.c.id)
             .join(theirs, theirs.c.aggregate_uuid == own.c.aggregate_uuid)
             .join(member, member.c.id == theirs.c.provider_id)
             .where(shared.c.root_provider_id == root_id,
                    db_filters.has_traits(shared.c.id, [sharing_trait],
                                          conn.dialect.name)))
    return {row[0] for row in conn.execute(query)}


def matching_providers(conn, filters, resources=(), in_tree=None, name=None,
                       uuid=None, partitions=None):
    """Uuids of providers that meet ``filters`` themselves, have room for
    every (class id, amount) of ``resources``, and are in the tree of root
    id ``in_tree`` and lie in ``partitions`` when given (Placement's
    provider list filters)."""
    query = sa.select(_p.c.uuid).where(
        *db_filters.trait_clauses(_p.c.id, filters, conn.dialect.name),
        *db_filters.aggregate_clauses(_p.c.id, filters, conn.dialect.name))
    if in_tree is not None:
        query = query.where(_p.c.root_provider_id == in_tree)
    if name is not None:
        query = query.where(_p.c.name == name)
    if uuid is not None:
        query = query.where(_p.c.uuid == uuid)
    if partitions is not None:
        query = query.where(_p.c.partition.in_(sorted(partitions)))
    for class_id, amount in resources:
        roomy = db_suppliers.providers_with_room(class_id, amount)
        query = query.where(_p.c.id.in_(roomy.scalar_subquery()))
    return [row[0] for row in conn.execute(query)]
