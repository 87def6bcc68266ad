"""The room left per provider and class (``usages.free``), read in
order: what a claim's windows of roots are made from
(``scheduling/windows.py``). Each read follows the (class, free,
provider) index, so it costs a page, never the cloud."""

import collections
import functools
import time

import sqlalchemy as sa

from allocworker.db import api
from allocworker.db import prepared
from allocworker.db import schema
from allocworker.db.search import narrowing

_p = schema.providers
_inv = schema.inventories
_u = schema.usages
_pt = schema.provider_traits


Room = collections.namedtuple('Room', ['free', 'provider_id', 'root_id'])


def roomiest(conn, class_id, amount, most_first, after=None, count=16,
             scope=None):
    """Up to ``count`` providers with room for ``amount`` of ``class_id``
    (by the kept room left, ``usages.free``), as ``Room`` rows: the most
    room first (``most_first``) or the least, ties by provider id, after
    the ``(free, provider id)`` key ``after`` of an earlier page, among
    the providers that ``scope`` (``db/search/narrowing.Scope``) admits for
    the class. Read along the (class, free, provider) index, or from the
    few roots the scope names: the cost is the page's, not the
    cloud's."""
    query = _admitted(sa.select(_u.c.free, _u.c.provider_id).where(
        _u.c.resource_class_id == class_id, _u.c.free >= amount),
        scope, class_id, conn.dialect.name)
    order = [('free', most_first), ('provider_id', most_first)]
    if after is not None:
        free, provider = after
        if most_first:
            query = query.where(_u.c.free <= free, sa.or_(
                _u.c.free < free, _u.c.provider_id < provider))
        else:
            query = query.where(_u.c.free >= free, sa.or_(
                _u.c.free > free, _u.c.provider_id > provider))
    return _with_roots(conn, query.limit(count), order)


def _admitted(query, scope, class_id, dialect):
    """``query`` (of ``usages``) kept to the providers ``scope`` admits
    for ``class_id``."""
    if scope is None:
        return query
    if not narrowing.asks_of_the_root(scope, class_id):
        # No join: joined, PostgreSQL merge-joined the providers from
        # their first id on to keep the page's order.
        return query.where(*narrowing.provider_clauses(
            _u.c.provider_id, None, scope, class_id, dialect))
    return query.join(_p, _p.c.id == _u.c.provider_id).where(
        *narrowing.provider_clauses(_p.c.id, _p.c.root_provider_id, scope,
                                    class_id, dialect))


def within(conn, roots, class_id, amount, most_first, count=None):
    """Up to ``count`` (every one when None) providers of the trees of
    ``roots`` (root ids) with room for ``amount`` of ``class_id``, as
    ``Room`` rows, the most room first (``most_first``) or the least,
    ties in random order (so that concurrent claims into one zone start
    on different hosts): read from the trees' providers (the index of
    their roots), never the room index, ranked by the database."""
    rows = _within_query(conn.dialect.name, most_first,
                         count is not None).execute(
        conn, {'roots': sorted(roots), 'class_id': class_id,
               'amount': amount, 'count': count})
    return [Room(*row) for row in rows]


@functools.lru_cache(maxsize=16)
def _within_query(dialect, most_first, limited):
    shuffled = sa.func.rand() if dialect == 'mysql' else sa.func.random()
    query = (sa.select(_u.c.free, _u.c.provider_id, _p.c.root_provider_id)
             .join(_p, _p.c.id == _u.c.provider_id)
             .where(prepared.in_list(_p.c.root_provider_id, 'roots',
                                     sa.Integer, dialect),
                    _u.c.resource_class_id ==
                    sa.bindparam('class_id', type_=sa.Integer),
                    _u.c.free >= sa.bindparam('amount',
                                              type_=sa.BigInteger))
             .order_by(_u.c.free.desc() if most_first else _u.c.free,
                       shuffled))
    if limited:
        query = query.limit(sa.bindparam('count', type_=sa.Integer))
    return prepared.Core(query)


def _with_roots(conn, page, order):
    """``page`` (a select of free and provider id, limited) ordered by
    ``order`` [(column name, descending)], as ``Room`` rows in that
    order, the roots joined to the page only: joined to the whole table,
    PostgreSQL merge-joined the providers from their first id on (33 ms
    at 30,000 trees for a page of 8)."""
    def ordered(columns):
        return [columns[name].desc() if descending else columns[name]
                for name, descending in order]

    paged = page.order_by(*ordered(_u.c)).subquery('page')
    query = (sa.select(paged.c.free, paged.c.provider_id,
                       _p.c.root_provider_id)
             .join(_p, _p.c.id == paged.c.provider_id)
             .order_by(*ordered(paged.c)))
    return [Room(*row) for row in conn.execute(query)]


def shared_class_ids(conn, sharing_trait, class_ids):
    """Those of ``class_ids`` that a provider carrying ``sharing_trait``
    has inventory of."""
    if sharing_trait is None or not class_ids:
        return frozenset()
    # Read once per transaction: a shared claim transaction searches
    # for the same classes again and again.
    classes = sorted(class_ids)
    return api.per_transaction(
        conn, ('shared classes', sharing_trait, tuple(classes)),
        lambda: frozenset(row[0] for row in _shared_class_query(
            conn.dialect.name).execute(
                conn, {'trait': sharing_trait, 'classes': classes})))


@functools.lru_cache(maxsize=4)
def _shared_class_query(dialect):
    """Built once (built and rendered per call it cost the worker 0.5-0.7
    ms of a claim's 7-8) but planned for its values: a generic plan
    merge-joined the inventories from the lowest provider id, cheap only
    while the sharing providers' ids are low."""
    return prepared.Core(
        sa.select(_inv.c.resource_class_id).distinct()
        .join(_pt, _pt.c.provider_id == _inv.c.provider_id)
        .where(_pt.c.trait_id == sa.bindparam('trait', type_=sa.Integer),
               prepared.any_of(_inv.c.resource_class_id, 'classes',
                               sa.Integer, dialect)),
        prepare=False)


def roomiest_from(conn, amounts, start, count, scope=None):
    """For each class id of ``amounts`` {class id: amount}, up to
    ``count`` providers that share the most room left for it (at least
    the amount), as ``Room`` rows, in provider id order from the id
    ``start`` on, wrapping round to the lowest ids: one statement for
    every class (a second only for a class whose list wraps), along the
    same index as ``roomiest``, among the providers ``scope`` admits."""
    classes = sorted(amounts)
    rows = _from_each(conn, amounts, classes, start, True, count, scope)
    short = {c: count - len(rows[c]) for c in classes if len(rows[c]) < count}
    if short:
        wrapped = _from_each(conn, amounts, sorted(short), start, False,
                             max(short.values()), scope)
        for class_id, missing in short.items():
            rows[class_id] += wrapped[class_id][:missing]
    return [room for class_id in classes for room in rows[class_id]]


def _from_each(conn, amounts, classes, start, onwards, count, scope):
    """{class id: [Room]} of the providers from id ``start`` on
    (``onwards``) or below it that share the most room for each class, a
    page per class, in one statement."""
    bound = {'start': start, 'count': count}
    for n, class_id in enumerate(classes):
        bound.update({'class_%d' % n: class_id,
                      'amount_%d' % n: amounts[class_id]})
    found = {class_id: [] for class_id in classes}
    if scope is None or scope == narrowing.EVERYWHERE:
        query = _from_each_query(len(classes), onwards)
    else:
        query = _from_each_within(tuple(classes), onwards, scope,
                                  conn.dialect.name)
    for class_id, free, provider_id, root_id in conn.execute(query, bound):
        found[class_id].append(Room(free, provider_id, root_id))
    return found


@functools.lru_cache(maxsize=32)
def _from_each_query(classes, onwards):
    """``_from_each``'s statement for that many classes, built once."""
    return _from_each_statement(classes, onwards, lambda n: lambda q: q)


def _from_each_within(classes, onwards, scope, dialect):
    """``_from_each``'s statement for ``classes`` within ``scope``, kept
    per scope (``narrowing.kept_statement``)."""
    return narrowing.kept_statement(
        scope, lambda: _from_each_statement(
            len(classes), onwards, lambda n: lambda query: _admitted(
                query, scope, classes[n], dialect)),
        'from each', classes, onwards, dialect)


def _from_each_statement(classes, onwards, admitted):
    """``_from_each``'s statement; ``admitted(n)`` keeps a query of
    ``usages`` to the providers admitted for the n-th class."""
    start = sa.bindparam('start', type_=sa.Integer)
    pages = []
    for n in range(classes):
        class_id = sa.bindparam('class_%d' % n, type_=sa.Integer)
        keep = admitted(n)
        # The top of the index, not max(): under a filter's join
        # PostgreSQL computed max() over every row of the class.
        top = (keep(sa.select(_u.c.free)
                    .where(_u.c.resource_class_id == class_id,
                           _u.c.free >= sa.bindparam('amount_%d' % n,
                                                     type_=sa.BigInteger)))
               .order_by(_u.c.free.desc()).limit(1)
               .correlate(None).scalar_subquery())
        page = (keep(sa.select(_u.c.resource_class_id, _u.c.free,
                               _u.c.provider_id))
                .where(_u.c.resource_class_id == class_id,
                       _u.c.free == top,
                       _u.c.provider_id >= start if onwards
                       else _u.c.provider_id < start)
                .order_by(_u.c.provider_id)
                .limit(sa.bindparam('count', type_=sa.Integer))
                .subquery())
        pages.append(sa.select(page))
    every = sa.union_all(*pages).subquery('page')
    return (sa.select(every.c.resource_class_id, every.c.free,
                      every.c.provider_id, _p.c.root_provider_id)
            .join(_p, _p.c.id == every.c.provider_id)
            .order_by(every.c.resource_class_id, every.c.provider_id))


_id_ranges = {}
ID_RANGE_SECONDS = 30.0


def provider_id_range(conn, class_ids):
    """(lowest, highest) id of the providers with a usage counter of any
    of ``class_ids`` (None when there is none), read again at most every
    ``ID_RANGE_SECONDS``: it only bounds a random start, which drawn over
    every provider id would land far more often on the first provider of
    a class after a run of ids that have none (sharing providers, roots)."""
    key = (api.database_key(conn), tuple(sorted(class_ids)))
    known = _id_ranges.get(key)
    now = time.monotonic()
    if known is None or now - known[1] > ID_RANGE_SECONDS:
        row = conn.execute(
            sa.select(sa.func.min(_u.c.provider_id),
                      sa.func.max(_u.c.provider_id))
            .where(_u.c.resource_class_id.in_(key[1]))).first()
        known = _id_ranges[key] = (
            tuple(row) if row and row[0] is not None else None, now)
    return known[0]


def tree_used(root_id):
    """The units used in the tree of ``root_id`` (a value or a column),
    every class together, counted over the inventories as a window's
    weighing counts them: a scalar subquery, a change detector (did
    anyone place in this tree since?), not an amount of anything."""
    return (sa.select(sa.func.coalesce(sa.func.sum(_u.c.used), 0))
            .select_from(_u)
            .join(_inv, sa.and_(_inv.c.provider_id == _u.c.provider_id,
                                _inv.c.resource_class_id ==
                                _u.c.resource_class_id))
            .join(_p, _p.c.id == _u.c.provider_id)
            .where(_p.c.root_provider_id == root_id)
            .scalar_subquery())


def refresh(conn):
    """Set every counter's room left from its inventory and usage again
    (what writers of an earlier release, which move ``used`` only, leave
    behind in a rolling upgrade); the number of rows it changed."""
    capacity = (sa.cast(_inv.c.total - _inv.c.reserved, sa.Float) *
                _inv.c.allocation_ratio)
    rounded = (sa.cast(capacity, sa.Integer)
               if conn.dialect.name == 'sqlite' else sa.func.floor(capacity))
    room = (sa.select(rounded)
            .where(_inv.c.provider_id == _u.c.provider_id,
                   _inv.c.resource_class_id == _u.c.resource_class_id)
            .scalar_subquery())
    value = sa.func.coalesce(room, 0) - _u.c.used
    return conn.execute(sa.update(_u).where(_u.c.free != value)
                        .values(free=value)).rowcount
