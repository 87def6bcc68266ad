"""Which roots a request's filters admit, judged in the database from the
filters' own indexes (aggregate members, trait holders, a tree's
providers), so that a claim's windows (``db/search/rooms.py``) and a candidate
search's slices (``db/search/candidates.roots``) hold only roots that could
hold a candidate: their cost follows the roots a request admits, not the
cloud's size nor how rare those roots are.

A ``Scope`` names ids only, already resolved:

``roots``
    the root ids a candidate may be anchored at, or None for any;
``root_required``, ``root_forbidden``
    trait ids the root itself carries, and lacks;
``trees``
    ``Filters`` (traits and aggregates asked), each met by at least one
    provider of the root's tree;
``by_class``
    {class id: alternatives}: a provider serves that class for one of
    the request's groups only if it meets one alternative ``(own,
    tree)``: ``own`` on itself, ``tree`` (aggregates, or None) on itself
    or its root (Placement's rule for the unnumbered group). A class
    with an alternative of no filter at all is left out;
``partitions``
    the partitions the root may lie in, or None for any (a caller bound
    to a partition, or a request naming some: RPC 1.6).

Every condition of a scope is necessary for a candidate, never more, so
a search within it still finds every candidate there is.
"""

import collections

import sqlalchemy as sa

from allocworker.db import prepared
from allocworker.db import schema
from allocworker.db.search import filters as db_filters

_p = schema.providers
_pa = schema.provider_aggregates
_pt = schema.provider_traits

Scope = collections.namedtuple('Scope', [
    'roots', 'root_required', 'root_forbidden', 'trees', 'by_class',
    'partitions'], defaults=(None,))
EVERYWHERE = Scope(None, (), (), (), {})

# Past this many roots, reading every provider of the admitted roots
# costs more than walking the room index under the filters: a filter
# that admits so many finds a window's roots after a few pages of the
# index.
FEW_ROOTS = 2000


def key(scope):
    """``scope`` as a value a dict can key on (statements built for a
    scope are kept by it)."""
    def filters(value):
        return None if value is None else db_filters.hashable(value)

    return (None if scope.roots is None else tuple(sorted(scope.roots)),
            tuple(sorted(scope.root_required)),
            tuple(sorted(scope.root_forbidden)),
            tuple(filters(f) for f in scope.trees),
            tuple((class_id, tuple((filters(own), filters(tree))
                                   for own, tree in alternatives))
                  for class_id, alternatives in sorted(
                      scope.by_class.items())),
            None if scope.partitions is None else tuple(sorted(
                scope.partitions)))


def _lists_a_facet(scope):
    """Whether ``scope`` asks for something only some roots have, which
    its own index lists (an aggregate, a trait, a partition)."""
    return bool(scope.trees or scope.root_required or
                scope.partitions is not None)


def admitted_roots(conn, scope):
    """The sorted root ids that every root condition of ``scope``
    admits; None when it names no condition that admits only some roots
    (roots named, aggregates, traits asked of the root or of a tree), or
    when more than ``FEW_ROOTS`` are admitted (a filter that admits that
    many narrows the room index walk enough)."""
    dialect = conn.dialect.name
    if scope.roots is not None:
        if not (_lists_a_facet(scope) or scope.root_forbidden):
            return sorted(scope.roots)
        return sorted(row[0] for row in conn.execute(
            sa.select(_p.c.id).where(*root_clauses(_p.c.id, scope,
                                                   dialect))))
    if not _lists_a_facet(scope):
        return None
    found = {row[0] for row in _admitted_query(scope, dialect).execute(
        conn, {})}
    return sorted(found) if len(found) <= FEW_ROOTS else None


def sampled_roots(conn, scope, size, residue):
    """(about ``size`` of the root ids ``scope`` admits, sorted, whether
    they are all it admits), or None when a sample would not do
    (``scope`` asks of no facet, the sample came out empty, or the facet
    has more than ``FEW_ROOTS`` holders: ``admitted_roots`` decides).
    The sample is the facet's holders whose id hashes to ``residue``
    modulo their number over ``size``: only those are looked up, so its
    cost follows ``size``, not how many roots the scope admits (all
    1,000 of a 1% zone at 100,000 trees: 3 ms)."""
    if scope.roots is not None or not _lists_a_facet(scope):
        return None
    rows = _sampled_query(scope, conn.dialect.name, size).execute(
        conn, {'residue': residue}).all()
    if not rows or rows[0][1] > FEW_ROOTS:
        return None
    return sorted({row[0] for row in rows}), rows[0][1] <= size


_statements = {}


def kept_statement(scope, build, *shape):
    """The statement ``build()`` makes for ``scope`` and ``shape`` (what
    else it depends on), built once and kept by the scope's key: Nova
    asks the same filters (its default, its zones, its flavors' traits)
    again and again, and a statement built per call cost a claim 1-4 ms
    of CPU. At most 256 are kept."""
    kept_by = (key(scope),) + shape
    statement = _statements.get(kept_by)
    if statement is None:
        if len(_statements) >= 256:
            _statements.clear()
        statement = _statements[kept_by] = build()
    return statement


def _admitted_query(scope, dialect):
    """``_from_a_facet``'s statement for ``scope``, planned for its
    values: its generic plan read 6 ms a claim at 10,000 trees against
    1-2 planned."""
    return kept_statement(scope, lambda: prepared.Core(
        _from_a_facet(scope, dialect).limit(FEW_ROOTS + 1), prepare=False),
        'admitted', dialect, FEW_ROOTS)


def _sampled_query(scope, dialect, size):
    """``_from_a_facet(scope, dialect, size)``, kept per scope."""
    return kept_statement(scope, lambda: prepared.Core(
        _from_a_facet(scope, dialect, size), prepare=False),
        'sampled', dialect, size)


# A sample keeps a holder by its id hashed (MINSTD's multiplier, modulo
# a prime), so that roots whose ids fall in steps (every tenth host in a
# zone) are not all kept or all left.
_HASH_FACTOR, _HASH_PRIME = 48271, 2147483647


def _from_a_facet(scope, dialect, size=None):
    """The roots ``scope`` admits, distinct, read from the index of one
    fact it asks for (a trait of the root, or a trait or aggregate of a
    tree's provider) out to the providers that hold it, so that the
    database starts from the few that hold it, not from every root.
    With ``size``: a sample of about ``size`` of them (bound
    ``residue``), each beside the facet's number of holders."""
    if not (scope.trees or scope.root_required):
        return _in_partitions(scope, dialect, size)
    facet, held = _facet(scope, dialect)
    holder, joined = _holders(facet, dialect)
    columns, sampled = [holder.c.root_provider_id], []
    if size is not None:
        counted, counted_held = _facet(scope, dialect)
        joined, count, sampled = _sample(joined, counted, counted_held,
                                         facet.c.provider_id, size)
        columns.append(count)
    query = sa.select(*columns).distinct().select_from(joined).where(
        held, *sampled)
    if scope.root_required:
        return query.where(holder.c.parent_provider_id.is_(None),
                           *root_clauses(holder.c.id, scope, dialect))
    wanted = scope.trees[0]
    return query.where(
        *db_filters.trait_clauses(holder.c.id, wanted, dialect),
        *db_filters.aggregate_clauses(holder.c.id, wanted, dialect),
        *root_clauses(holder.c.root_provider_id,
                      scope._replace(trees=scope.trees[1:]), dialect))


def _sample(joined, counted, counted_held, holder_id, size):
    """(``joined`` beside the facet's number of holders, that number, the
    condition keeping about ``size`` holders: those whose id, hashed,
    is ``residue`` modulo the holders over ``size``)."""
    holders = (sa.select(sa.func.count().label('holders'))
               .select_from(counted).where(counted_held)
               .subquery('counted'))
    modulus = sa.case((holders.c.holders > size,
                       holders.c.holders // size), else_=1)
    hashed = (sa.cast(holder_id, sa.BigInteger) * _HASH_FACTOR) % \
        _HASH_PRIME
    return (joined.join(holders, sa.true()), holders.c.holders,
            [hashed % modulus == sa.bindparam(
                'residue', type_=sa.Integer) % modulus])


def _in_partitions(scope, dialect, size=None):
    """``_from_a_facet`` of a scope whose only facet is its partitions:
    the roots lying there, read from the index of each partition's
    providers."""
    def held(root):
        return sa.and_(root.c.partition.in_(sorted(scope.partitions)),
                       root.c.parent_provider_id.is_(None))

    root = _p.alias('root')
    joined, columns, sampled = root, [root.c.id], []
    if size is not None:
        counted = _p.alias('counted')
        joined, count, sampled = _sample(joined, counted, held(counted),
                                         root.c.id, size)
        columns.append(count)
    return sa.select(*columns).select_from(joined).where(
        held(root), *sampled, *root_clauses(
            root.c.id, scope._replace(partitions=None), dialect))


def _facet(scope, dialect):
    """(a new alias of the facet ``_from_a_facet`` starts from, the
    condition its rows hold the fact on)."""
    # Aliases: the conditions of root_clauses are EXISTS over the same
    # tables, which must not correlate to these.
    if scope.root_required:
        traits = _pt.alias()
        return traits, traits.c.trait_id == scope.root_required[0]
    wanted = scope.trees[0]
    if wanted.member_of:
        aggregates = _pa.alias()
        return aggregates, prepared.one_of(
            aggregates.c.aggregate_uuid, wanted.member_of[0], sa.String,
            dialect)
    traits = _pt.alias()
    return traits, prepared.one_of(
        traits.c.trait_id, sorted(wanted.required)[:1] or
        wanted.any_traits[0], sa.Integer, dialect)


def _holders(facet, dialect):
    """(the providers holding ``facet``'s rows, the join of the two). On
    PostgreSQL each holder is looked up by its id, fenced (``OFFSET 0``
    keeps the planner from flattening it): joined plainly, PostgreSQL
    scanned every provider to hash them (16 ms at 100,000 trees, 3 ms
    by lookups)."""
    columns = (_p.c.id, _p.c.root_provider_id, _p.c.parent_provider_id)
    if dialect != 'postgresql':
        holder = _p.alias()
        return holder, sa.join(facet, holder,
                               holder.c.id == facet.c.provider_id)
    holder = (sa.select(*columns).where(_p.c.id == facet.c.provider_id)
              .offset(0).lateral())
    return holder, sa.join(facet, holder, sa.true())


def root_clauses(root, scope, dialect):
    """The conditions ``scope`` puts on the root id in ``root``."""
    clauses = []
    if scope.roots is not None:
        clauses.append(prepared.one_of(root, scope.roots, sa.Integer,
                                       dialect))
    clauses += db_filters.trait_clauses(root, db_filters.Filters(
        scope.root_required, (), scope.root_forbidden, (), ()), dialect)
    if scope.partitions is not None:
        owner = _p.alias('owner')
        clauses.append(sa.exists().where(
            owner.c.id == root,
            owner.c.partition.in_(sorted(scope.partitions))))
    for wanted in scope.trees:
        member = _p.alias()
        clauses.append(sa.exists().where(
            member.c.root_provider_id == root,
            *db_filters.trait_clauses(member.c.id, wanted, dialect),
            *db_filters.aggregate_clauses(member.c.id, wanted, dialect)))
    return clauses


def admits_most(scope):
    """Whether ``scope`` only rules providers out (forbidden traits and
    aggregates), which most providers pass, rather than asking for what
    few may have."""
    def only_forbids(filters):
        return filters is None or not (
            filters.required or filters.any_traits or filters.member_of)

    return (scope.roots is None and not scope.root_required and
            not scope.trees and scope.partitions is None and all(
                only_forbids(own) and only_forbids(tree)
                for alternatives in scope.by_class.values()
                for own, tree in alternatives))


def asks_of_the_root(scope, class_id):
    """Whether ``scope`` puts a condition on the root of a provider
    serving ``class_id`` (else only on the provider itself)."""
    return bool(scope.roots is not None or scope.root_required or
                scope.root_forbidden or scope.trees or
                scope.partitions is not None or any(
                    tree is not None and any(tree)
                    for _own, tree in scope.by_class.get(class_id, ())))


def provider_clauses(provider, root, scope, class_id, dialect):
    """The conditions ``scope`` puts on the provider (and root) ids in
    ``provider`` and ``root`` serving ``class_id`` (``root`` may be None
    where ``asks_of_the_root`` says no)."""
    clauses = [] if root is None else root_clauses(root, scope, dialect)
    alternatives = scope.by_class.get(class_id)
    if alternatives:
        clauses.append(sa.or_(*(sa.and_(
            sa.true(), *db_filters.trait_clauses(provider, own, dialect),
            *db_filters.aggregate_clauses(provider, own, dialect),
            *([db_filters.either(provider, root, tree, dialect)]
              if tree is not None else []))
            for own, tree in alternatives)))
    return clauses
