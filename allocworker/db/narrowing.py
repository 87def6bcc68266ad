"""Which roots a request's filters admit, judged in the database from the
filters' own indexes (aggregate members, trait holders, a tree's
providers), so that a claim's windows (``db/rooms.py``) and a candidate
search's slices (``db/candidates.roots``) hold only roots that could
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
    with an alternative of no filter at all is left out.

Every condition of a scope is necessary for a candidate, never more, so
a search within it still finds every candidate there is.
"""

import collections

import sqlalchemy as sa

from allocworker.db import filters as db_filters
from allocworker.db import prepared
from allocworker.db import schema

_p = schema.providers

Scope = collections.namedtuple('Scope', [
    'roots', 'root_required', 'root_forbidden', 'trees', 'by_class'])
EVERYWHERE = Scope(None, (), (), (), {})

# Past this many roots, listing the admitted roots costs more than
# walking the room index under the filters: a filter that admits so
# many finds a window's roots after a few pages of the index.
FEW_ROOTS = 1000


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
                      scope.by_class.items())))


def admitted_roots(conn, scope, most=FEW_ROOTS):
    """The sorted root ids that ``scope``'s root conditions admit, read
    from the most selective filter's index outwards; None when it names
    no condition that admits only some roots (aggregates, traits asked
    of the root or of a tree) or when more than ``most`` are admitted
    (a filter that admits that many narrows the room index walk
    enough)."""
    if scope.roots is not None or not (scope.trees or scope.root_required):
        return None
    query = (sa.select(_p.c.id)
             .where(_p.c.parent_provider_id.is_(None),
                    *root_clauses(_p.c.id, scope, conn.dialect.name))
             .order_by(_p.c.id).limit(most + 1))
    found = [row[0] for row in conn.execute(query)]
    return found if len(found) <= most else None


def root_clauses(root, scope, dialect):
    """The conditions ``scope`` puts on the root id in ``root``."""
    clauses = []
    if scope.roots is not None:
        clauses.append(prepared.one_of(root, scope.roots, sa.Integer,
                                       dialect))
    clauses += db_filters.trait_clauses(root, db_filters.Filters(
        scope.root_required, (), scope.root_forbidden, (), ()), dialect)
    for wanted in scope.trees:
        member = _p.alias()
        clauses.append(sa.exists().where(
            member.c.root_provider_id == root,
            *db_filters.trait_clauses(member.c.id, wanted, dialect),
            *db_filters.aggregate_clauses(member.c.id, wanted, dialect)))
    return clauses


def asks_of_the_root(scope, class_id):
    """Whether ``scope`` puts a condition on the root of a provider
    serving ``class_id`` (else only on the provider itself)."""
    return bool(scope.roots is not None or scope.root_required or
                scope.root_forbidden or scope.trees or any(
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
