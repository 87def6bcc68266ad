"""Queries for the providers that can supply a class to candidates
anchored at a set or range of roots: the trees' own providers with
room, and the sharing providers that anchor at them through an
aggregate (``suppliers``), for ``scheduling/combine.py``."""

import collections
import functools

import sqlalchemy as sa

from allocworker.db import prepared
from allocworker.db import schema
from allocworker.db.search import filters as db_filters

_p = schema.providers
_inv = schema.inventories
_u = schema.usages
_pt = schema.provider_traits
_pa = schema.provider_aggregates


def _room(amount):
    """The inventory row (joined with its usage counter) has room for one
    more allocation of ``amount``: Placement's capacity and unit rule."""
    used = sa.func.coalesce(_u.c.used, 0)
    return sa.and_(
        used + amount <= (_inv.c.total - _inv.c.reserved) *
        _inv.c.allocation_ratio,
        _inv.c.min_unit <= amount, _inv.c.max_unit >= amount,
        amount % _inv.c.step_size == 0)


def providers_with_room(class_id, amount):
    """A select of the ids of the providers whose inventory of
    ``class_id`` (joined with its usage counter) has room for
    ``amount``."""
    return (sa.select(_inv.c.provider_id)
            .select_from(_inv.outerjoin(_u, sa.and_(
                _u.c.provider_id == _inv.c.provider_id,
                _u.c.resource_class_id == _inv.c.resource_class_id)))
            .where(_inv.c.resource_class_id == class_id, _room(amount)))


def _with_room(query, provider_column, class_id, amount, dialect):
    """``query`` kept to the providers with room for ``amount`` of
    ``class_id``. On PostgreSQL each provider's inventory is looked up
    by its key, fenced (``OFFSET 0``): the room conditions' estimate
    (one row in fifty) made it scan every inventory of the cloud to
    hash-join a slice's few hundred (3 ms on 10,000 hosts, 30 on
    100,000, against 0.3 looked up)."""
    if dialect != 'postgresql':
        return (query.join(_inv, sa.and_(
            _inv.c.provider_id == provider_column,
            _inv.c.resource_class_id == class_id))
            .outerjoin(_u, sa.and_(_u.c.provider_id == _inv.c.provider_id,
                                   _u.c.resource_class_id == class_id))
            .where(_room(amount)))
    looked_up = (providers_with_room(class_id, amount)
                 .where(_inv.c.provider_id == provider_column)
                 .offset(0).lateral('room'))
    return query.join(looked_up, sa.true())


def _anchored_at(column, ranged, dialect, few):
    """The root in ``column`` is one of the bound roots: between ``low``
    and ``high`` when ``ranged``, else in the list ``roots`` (``few``:
    in a prepared statement)."""
    if ranged:
        return column.between(sa.bindparam('low', type_=sa.Integer),
                              sa.bindparam('high', type_=sa.Integer))
    listed = prepared.in_list if few else prepared.any_of
    return listed(column, 'roots', sa.Integer, dialect)


def suppliers(conn, roots, class_id, amount, filters=db_filters.NO_FILTERS,
              tree_filters=None, in_tree=None, sharing_trait=None,
              sharing_filters=None, partitions=None):
    """(provider id, anchor root id) pairs of providers that have room for
    ``amount`` of ``class_id`` (any provider when ``class_id`` is None)
    for a candidate anchored at one of ``roots`` (a set of root ids, or
    a (lowest, highest) range of them).

    A provider anchors at its own root. A provider carrying
    ``sharing_trait`` also anchors at the root of every provider that
    shares an aggregate with it (unless ``sharing_filters`` is None).
    ``filters`` apply to the provider itself; ``tree_filters`` (aggregates
    only) are met by the provider or by its anchor root; ``in_tree`` (a
    root id) is the tree the provider must be in. ``sharing_filters``
    apply to a sharing provider used through its aggregates, which lies
    in one of ``partitions`` when they are given (a tree's own
    providers lie in its root's partition, which the roots' scope
    judged).
    """
    ranged = isinstance(roots, tuple)
    sharing = sharing_filters is not None and sharing_trait is not None
    # Few roots (a claim's window): from their trees out to the sharing
    # providers; many: from the few sharing providers out to the trees.
    from_trees = not ranged and len(roots) <= FEW_ROOTS
    query = _supplier_query(
        ranged, class_id is not None, db_filters.hashable(filters),
        db_filters.hashable(tree_filters), in_tree is not None,
        db_filters.hashable(sharing_filters) if sharing else None,
        from_trees,
        None if partitions is None else tuple(sorted(partitions)),
        conn.dialect.name)
    bound = {'class_id': class_id, 'amount': amount, 'in_tree': in_tree,
             'sharing_trait': sharing_trait}
    if ranged:
        bound.update(low=roots[0], high=roots[1])
    else:
        bound['roots'] = sorted(roots)
    return [tuple(row) for row in query.execute(conn, bound)]


FEW_ROOTS = 64


_Shape = collections.namedtuple('_Shape', [
    'ranged', 'with_class', 'filters', 'tree_filters', 'in_tree',
    'sharing_filters', 'from_trees', 'partitions', 'dialect'])


@functools.lru_cache(maxsize=256)
def _supplier_query(*shape):
    """``suppliers``' statement for one shape of search (``_Shape``),
    built once (its values are bound at execution), prepared on
    PostgreSQL for a few roots (``from_trees``: planning the sharing
    providers' union cost the server 1.7-2.8 ms a claim, running it
    0.3-0.5); for a range or many roots, planned for them. The tree's
    own providers, and with ``sharing_filters`` the sharing providers
    that anchor at the roots through an aggregate, in a union."""
    shape = _Shape(*shape)
    direct = _own_suppliers(shape)
    if shape.sharing_filters is None:
        return prepared.Core(direct, prepare=shape.from_trees)
    return prepared.Core(sa.union(direct, _sharing_suppliers(shape)),
                         prepare=shape.from_trees)


def _asked(shape, query, provider, root):
    """``query`` kept to the suppliers that have room (with a class) and
    meet the shape's filters, for the provider and root columns given."""
    if shape.with_class:
        query = _with_room(query, provider,
                           sa.bindparam('class_id', type_=sa.Integer),
                           sa.bindparam('amount', type_=sa.BigInteger),
                           shape.dialect)
    if shape.tree_filters is not None:
        query = query.where(db_filters.either(
            provider, root, shape.tree_filters, shape.dialect))
    return query


def _own_suppliers(shape):
    """(provider id, anchor) of the providers of the roots' own trees."""
    query = (sa.select(_p.c.id, _p.c.root_provider_id.label('anchor'))
             .select_from(_p)
             .where(_anchored_at(_p.c.root_provider_id, shape.ranged,
                                 shape.dialect, shape.from_trees)))
    query = _asked(shape, query, _p.c.id, _p.c.root_provider_id).where(
        *db_filters.trait_clauses(_p.c.id, shape.filters, shape.dialect),
        *db_filters.aggregate_clauses(_p.c.id, shape.filters,
                                      shape.dialect))
    if shape.ranged and shape.partitions is not None:
        # A tree lies in its root's partition: the range is read from
        # the partitions' index, not through the others' trees in it.
        query = query.where(_p.c.partition.in_(shape.partitions))
    if shape.in_tree:
        query = query.where(_p.c.root_provider_id ==
                            sa.bindparam('in_tree', type_=sa.Integer))
    return query


def _sharing_suppliers(shape):
    """(provider id, anchor) of the sharing providers, each anchored at
    the roots it shares an aggregate with."""
    sharing, shared = _pt.alias('sharing'), _p.alias('shared')
    own, theirs = _pa.alias('own'), _pa.alias('theirs')
    if shape.from_trees:
        # The window's aggregates first, materialized: PostgreSQL otherwise
        # starts from the sharing providers' inventory (estimated at one
        # row) and walks every tree of their aggregates.
        member = (sa.select(theirs.c.aggregate_uuid,
                            _p.c.root_provider_id)
                  .join(theirs, theirs.c.provider_id == _p.c.id)
                  .where(_anchored_at(_p.c.root_provider_id, shape.ranged,
                                      shape.dialect, shape.from_trees))
                  .cte('member').prefix_with('MATERIALIZED',
                                             dialect='postgresql'))
        query = (sa.select(shared.c.id, member.c.root_provider_id)
                 .prefix_with('STRAIGHT_JOIN', dialect='mysql')
                 .select_from(member)
                 .join(own, own.c.aggregate_uuid == member.c.aggregate_uuid)
                 .join(sharing, sharing.c.provider_id == own.c.provider_id)
                 .join(shared, shared.c.id == sharing.c.provider_id))
        query = _asked(shape, query, shared.c.id, member.c.root_provider_id)
    else:
        # From the few providers with the sharing trait and room, out to
        # the trees they share with: MariaDB keeps this order
        # (STRAIGHT_JOIN); left to itself it walked every aggregate
        # membership first and probed the sharing providers from each
        # (0.1 s at 1,000 trees).
        member = _p.alias('member')
        query = (sa.select(shared.c.id, member.c.root_provider_id)
                 .prefix_with('STRAIGHT_JOIN', dialect='mysql')
                 .select_from(sharing)
                 .join(shared, shared.c.id == sharing.c.provider_id))
        query = (_asked(shape, query, shared.c.id, member.c.root_provider_id)
                 .join(own, own.c.provider_id == shared.c.id)
                 .join(theirs,
                       theirs.c.aggregate_uuid == own.c.aggregate_uuid)
                 .join(member, member.c.id == theirs.c.provider_id))
    query = query.where(
        sharing.c.trait_id == sa.bindparam('sharing_trait', type_=sa.Integer),
        _anchored_at(member.c.root_provider_id, shape.ranged, shape.dialect,
                     shape.from_trees),
        *db_filters.trait_clauses(shared.c.id, shape.sharing_filters,
                                  shape.dialect),
        *db_filters.aggregate_clauses(shared.c.id, shape.sharing_filters,
                                      shape.dialect))
    if shape.in_tree:
        query = query.where(shared.c.root_provider_id ==
                            sa.bindparam('in_tree', type_=sa.Integer))
    if shape.partitions is not None:
        query = query.where(shared.c.partition.in_(shape.partitions))
    return query
