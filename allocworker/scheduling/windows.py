"""The roots a claim weighs, a window at a time, in its strategy's order,
read from what the database keeps: the room left per provider and class
(``usages.free``, indexed), within the roots its request's filters admit
(``db/search/narrowing.py``), so a window costs the same on a hundred
hosts or a hundred thousand, however rare the hosts the filters admit.

A window is the roots of the ``[scheduling] window_size`` providers with
the most room (``spread``) or the least room that still fits (``pack``)
for each *anchoring* class of the request: a class it asks for that no
sharing provider offers. Every candidate takes each such class from a
provider of its own tree with room for it, so its root is on that
class's list. The next window continues every list where the last one
stopped; once one anchoring class's list is read to its end, every root
that could hold a candidate has been in a window, and a claim that found
nothing fitting in them can say that nothing fits.

``scope_of`` turns the request's filters into a ``Scope``. A scope that
lists its roots (a named host, a zone, a rare trait: few roots) is read
from those roots' providers, one anchoring class, ranked by the database
(``_within``); any other walks each class's room index under the
filters' conditions. A request whose every class a sharing provider may
serve has no anchoring class: its roots cannot be ranked this way, and
it is searched a slice of roots at a time (``windows`` yields ``None``
once).

``spread``'s first window over an unlisted scope that admits most
providers starts at a random place among the providers that share the
most room, so concurrent claims on a uniform cloud start on different
hosts (``_among_the_roomiest``); later windows read each list from the
top, and a root already weighed is not weighed again.

Within a window the claim orders the candidates by the strategy's score
over every requested class (``choosing.ordered``); the window decides
only which roots are weighed, not which one wins among them.
"""

import collections
import random

from allocworker.db.search import filters as db_filters
from allocworker.db.search import narrowing
from allocworker.db.search import rooms as db_rooms
from allocworker.scheduling import choosing


def anchoring_amounts(request, class_ids, shared):
    """{class id: the smallest amount any group asks of it} for the
    request's anchoring classes (those not in ``shared``, the class ids
    some sharing provider offers)."""
    amounts = {}
    for group in request.groups:
        for name, amount in group.resources.items():
            class_id = class_ids[name]
            amounts[class_id] = min(amount, amounts.get(class_id, amount))
    return {c: a for c, a in amounts.items() if c not in shared}


def scope_of(plans, root_required, root_forbidden, shared, roots=None,
             partitions=None):
    """The ``db/search/narrowing.Scope`` of a request searched by
    ``plans`` (one per group: its classes, the filters it asks of its
    providers), with ``root_required`` and ``root_forbidden`` trait ids,
    ``shared`` the class ids a sharing provider offers, ``roots`` the
    roots its ``in_tree`` allows and ``partitions`` those its roots may
    lie in (each None for any).

    A group that asks some class no sharing provider offers takes it
    from a provider of the candidate's own tree, so what the group asks
    of that provider holds somewhere in the tree (for the unnumbered
    group: each trait on some provider, each aggregate on some provider
    or the root), and on the provider itself for the class. A group
    whose classes sharing providers may all serve says nothing of the
    tree."""
    trees, by_class = [], collections.defaultdict(list)
    for plan in plans:
        anchoring = [c for _n, c, _a in plan.classes if c not in shared]
        trees += _asked_of_the_tree(plan, anchoring, shared)
        for class_id in anchoring:
            by_class[class_id].append((plan.filters, plan.tree_filters))
    unfiltered = db_filters.hashable(db_filters.NO_FILTERS)
    by_class = {
        c: tuple(alternatives) for c, alternatives in by_class.items()
        if not any(db_filters.hashable(own) == unfiltered and
                   (tree is None or not any(tree))
                   for own, tree in alternatives)}
    return narrowing.Scope(None if roots is None else frozenset(roots),
                           tuple(root_required), tuple(root_forbidden),
                           tuple(trees), by_class, partitions)


def _asked_of_the_tree(plan, anchoring, shared):
    """The ``Filters`` that some provider of a candidate's tree meets for
    ``plan``'s group, given its ``anchoring`` classes."""
    if not anchoring:
        return []
    asked = plan.asked
    if plan.group.single_provider:
        positive = db_filters.Filters(asked.required, asked.any_traits,
                                      (), asked.member_of, ())
        return [positive] if any(positive) else []
    found = [db_filters.Filters((), (), (), (aggregates,), ())
             for aggregates in asked.member_of]
    if all(c not in shared for _n, c, _a in plan.classes):
        # Traits of the unnumbered group are met by the providers it
        # uses together; with no sharing provider among them, those are
        # all in the tree.
        found += [db_filters.Filters((trait,), (), (), (), ())
                  for trait in asked.required]
        found += [db_filters.Filters((), (traits,), (), (), ())
                  for traits in asked.any_traits]
    return found


def windows(conn, amounts, strategy, size, scope=None, rest=None):
    """Sets of root ids, each new, a window at a time (see above), of
    the providers ``scope`` (``db/search/narrowing.Scope``) admits; a
    single ``None`` when there is no anchoring class. ``rest``: when the roots
    ``scope`` lists are a sample, what lists every one."""
    if not amounts:
        yield None
        return
    scope = scope or narrowing.EVERYWHERE
    if scope.roots is not None:
        yield from _within(conn, amounts, strategy, size, scope, rest)
        return
    most_first = strategy == choosing.SPREAD
    after = dict.fromkeys(amounts)
    seen = set()
    if most_first and narrowing.admits_most(scope):
        # A filter that admits few providers would be walked from a
        # random place past many it does not admit: its walk starts at
        # the top, and concurrent claims part in their tries instead.
        window = _among_the_roomiest(conn, amounts, size, scope)
        seen |= window
        if window:
            yield window
    while True:
        window, read_out = set(), False
        for class_id, amount in sorted(amounts.items()):
            rows = db_rooms.roomiest(conn, class_id, amount, most_first,
                                     after[class_id], size, scope)
            if rows:
                after[class_id] = (rows[-1].free, rows[-1].provider_id)
            window.update(row.root_id for row in rows)
            read_out = read_out or len(rows) < size
        window -= seen
        seen |= window
        if window:
            yield window
        if read_out:
            return


def _among_the_roomiest(conn, amounts, size, scope):
    """``spread``'s first window: for each class, ``size`` providers
    from a random place among those that share the most room (on a
    uniform cloud, all of them), so that concurrent claims start on
    different hosts instead of all weighing the same first ones. The
    windows after it read each list from its top as usual."""
    ids = db_rooms.provider_id_range(conn, amounts)
    if ids is None:
        return set()
    return {row.root_id for row in db_rooms.roomiest_from(
        conn, amounts, random.randint(*ids), size, scope)}


# Rows a claim first reads of a listed scope's roots: enough for several
# windows, so that the whole list is read only when none of them fits.
FIRST_ROWS = 64
# Roots of a listed scope a spread claim first ranks, drawn at random
# when the scope lists more: ranking every root of a zone of 1,000
# hosts read 2,000 index entries (8 ms at 100,000 trees) to fill a
# window of 8.
SAMPLED_ROOTS = 64


def _within(conn, amounts, strategy, size, scope, rest):
    """``windows`` over the roots ``scope`` lists, from one anchoring
    class's list (each candidate's root is on every such list, so one
    read to its end has held every root that could hold one), ranked by
    the database, roots of equal room in random order: its first rows,
    then, only if no window of them fitted, all of it. ``spread`` ranks
    first ``SAMPLED_ROOTS`` of the roots drawn at random (or the sample
    ``scope`` lists, when ``rest`` lists them all), so its first rows
    cost what a window costs however many roots the scope admits."""
    class_id = min(amounts)
    most_first = strategy == choosing.SPREAD
    seen = set()
    for roots, count, whole in _passes(scope.roots, most_first, rest):
        rooms = db_rooms.within(conn, roots, class_id, amounts[class_id],
                                most_first, count)
        ranked = [root for root in dict.fromkeys(r.root_id for r in rooms)
                  if root not in seen]
        for start in range(0, len(ranked), size):
            window = set(ranked[start:start + size])
            seen |= window
            yield window
        if count is None or (whole and len(rooms) < count):
            return


def _passes(roots, most_first, rest):
    """(roots, rows to read, whether they are every root) of
    ``_within``'s reads in turn: every root last."""
    if rest is not None:
        yield roots, FIRST_ROWS, False
        yield rest(), None, True
    elif most_first and len(roots) > SAMPLED_ROOTS:
        yield random.sample(list(roots), SAMPLED_ROOTS), FIRST_ROWS, False
        yield roots, None, True
    else:
        yield roots, FIRST_ROWS, True
        yield roots, None, True
