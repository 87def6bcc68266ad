"""Allocation candidates: where a request (``scheduling/request.py``)
could be placed right now, with Placement's semantics.

Interface
---------
``find(request, limit=None, randomize=False, conn=None, nested=True)``
    -> ``Found(candidates, providers)``. Reads in ``conn`` when given (so
    a caller can search inside its own write transaction), else in a
    reader transaction of its own. Raises ``Fault`` 400
    ``resource_class.not_found`` / ``trait.not_found`` for unknown names.
    ``nested`` False is Placement before 1.29: no candidate takes two
    providers of one tree, and summaries show only providers used.
``Candidate``: ``root_uuid`` (the tree the candidate is anchored in),
    ``allocations`` {provider uuid: {class: amount}}, ``mappings``
    {group label: [provider uuids]}.
``providers``: {uuid: ``summaries.Summary(uuid, parent_uuid, root_uuid,
    resources {class: {"capacity", "used"}}, traits [in trait id
    order])}`` for every provider of every tree a candidate allocates
    from.
``allocation_candidates(context, request, limit=None, nested=True)``:
    the policy check, then ``find`` with ``[api]
    randomize_allocation_candidates``.

How: the database does the filtering, one request group and resource
class at a time, for a slice of root providers at a time (in id order,
or from a random root on when randomising): which providers have room,
carry the traits, sit in the aggregates and tree asked (``db/search/``).
Python then combines, per root, only the providers that passed, and
stops once ``limit`` candidates are found, so memory depends on the
slice and the limit, never on the number of providers.

Rules (Placement's): a numbered group is met by one provider, with the
traits and aggregates itself. The unnumbered group takes each class from
one provider of the tree or a sharing provider; its required traits are
met by the providers it uses together, a forbidden trait by none of them,
and its aggregates by each provider or by the tree's root. A provider
with MISC_SHARES_VIA_AGGREGATE serves every tree that shares one of its
aggregates (for the unnumbered group only without ``in_tree``).
``isolate`` gives every numbered group its own provider; ``same_subtree``
needs one provider of the set above all the others; ``root_required``
filters the roots. Candidates are advice: ``allocate`` judges again.
"""

import collections
import random

from allocworker import bindings
from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db.catalog import providers as db_providers
from allocworker.db.catalog import resource_classes as db_classes
from allocworker.db.catalog import traits as db_traits
from allocworker.db.search import candidates as db_candidates
from allocworker.db.search import filters as db_filters
from allocworker.db.search import narrowing as db_narrowing
from allocworker.db.search import rooms as db_rooms
from allocworker import policy
from allocworker.scheduling import choosing
from allocworker.scheduling import combine
from allocworker.scheduling import search_reads
from allocworker.scheduling import summaries
from allocworker.scheduling import windows

SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'
FIRST_SLICE = 250
LARGEST_SLICE = 2000

Candidate = collections.namedtuple('Candidate', ['root_uuid', 'allocations',
                                                 'mappings'])
# Given by ``windowed`` only: ``ids`` {provider uuid: id}, ``tree_free``
# {root uuid: {class: room left in the tree}}, ``tree_used`` {root uuid:
# units used in the tree, every class together (``db_rooms.tree_used``)}.
Found = collections.namedtuple('Found', ['candidates', 'providers', 'ids',
                                         'tree_free', 'tree_used'],
                               defaults=(None, None, None))
# One group's search: its classes as (name, id, amount), the SQL filters.
# ``asked``: every filter of the group, as asked (narrowing.Scope's input).
_Plan = collections.namedtuple('_Plan', [
    'group', 'classes', 'filters', 'tree_filters', 'sharing_filters',
    'in_tree', 'asked'])


def allocation_candidates(context, request, limit=None, nested=True):
    policy.check(context, 'allocation_candidates', 'allocation candidates')
    request = scoped(context, request)
    if CONF.api.stale_reads:
        with db.stale_reader(snapshot=True) as conn:
            return find(request, limit,
                        randomize=CONF.api.randomize_allocation_candidates,
                        conn=conn, nested=nested)
    return find(request, limit,
                randomize=CONF.api.randomize_allocation_candidates,
                nested=nested)


def scoped(context, request, where='request'):
    """``request`` searching only the partitions ``context`` sees, or
    those of them it names (``bindings.asked``; 403 for others)."""
    return request._replace(partitions=bindings.asked(
        context, request.partitions, where + '.partitions'))


def find(request, limit=None, randomize=False, conn=None, nested=True):
    """The candidates and their trees' summaries, read on ``conn`` or in
    a snapshot of their own (so they agree with each other)."""
    if conn is None:
        with db.snapshot() as conn:
            return _find(conn, request, limit, randomize, nested)
    return _find(conn, request, limit, randomize, nested)


def windowed(conn, request, strategy, size, roots=None):
    """``Found`` for each window of roots in ``strategy``'s order
    (``windows.py``), lazily, read in ``conn``: what a claim weighs
    before it widens to the next window; only ``roots`` (ids) when it
    is not None."""
    prepared = _prepare(conn, request, nested=True, distinct=True,
                        roots=roots, sample=strategy == choosing.SPREAD)
    if prepared is None:
        return
    amounts = windows.anchoring_amounts(request, prepared.class_ids,
                                        prepared.shared_classes)
    if not amounts and prepared.rest is not None:
        # Slices of roots need every root admitted, not a sample.
        prepared = _prepare(conn, request, nested=True, distinct=True,
                            roots=roots)
    seen = set()
    for window in windows.windows(conn, amounts, strategy, size,
                                  prepared.scope, prepared.rest):
        if window is None:
            # No class ranks the roots: each slice of them is a window,
            # from a random root on for ``spread``.
            for chunk in _slices(conn, prepared,
                                 randomize=strategy == choosing.SPREAD):
                yield _weighed(conn, _in_slice(conn, prepared, chunk, seen))
            return
        # A window holds only roots the scope admits: no root filter
        # is left to judge.
        found = prepared.search.slice(sorted(window), seen, None)
        yield _weighed(conn, found, prepared.search.nodes)


def admitted(conn, request):
    """The ids of the roots ``request``'s filters admit when they admit
    few (a zone, a rare trait, a named host), else None (every root, or
    too many to list)."""
    if not _filters_roots(request):
        return None
    prepared = _prepare(conn, request, nested=True, distinct=True)
    if prepared is None:
        return frozenset()
    return prepared.allowed


def _filters_roots(request):
    """Whether ``request`` asks anything that can leave a root out but
    its resources (a request of resources alone admits every root)."""
    return bool(request.root_required or request.root_forbidden or
                request.partitions is not None or any(
                    g.required or g.any_traits or g.forbidden or
                    g.member_of or g.forbidden_aggregates or
                    g.in_tree is not None for g in request.groups))


# ``rest``: when ``allowed`` (and ``scope.roots``) are only a sample of
# the roots the filters admit, what lists them all; else None.
_Prepared = collections.namedtuple('_Prepared', [
    'search', 'class_ids', 'shared_classes', 'allowed', 'root_required',
    'root_forbidden', 'filtered', 'scope', 'rest', 'partitions'])


def _prepare(conn, request, nested, distinct=False, roots=None,
             sample=False):
    """How to search for ``request`` (within ``roots`` unless None);
    None when nothing can meet it. ``sample``: a few of many admitted
    roots will do at first (``_admitted``)."""
    trait_ids = _trait_ids(conn, request)
    class_ids = _class_ids(conn, request)
    sharing = db_traits.standard_id(conn, SHARING_TRAIT)
    # A class no sharing provider offers is searched in the trees only.
    shared = db_rooms.shared_class_ids(conn, sharing, set(class_ids.values()))
    plans, allowed = [], roots
    for group in request.groups:
        plan = _plan(conn, group, class_ids, trait_ids)
        if plan is None:
            return None
        plans.append(plan)
        if plan.in_tree is not None:
            anchors = {plan.in_tree}
            if group.single_provider and sharing is not None:
                anchors |= db_candidates.sharing_anchors(conn, plan.in_tree,
                                                         sharing)
            allowed = anchors if allowed is None else allowed & anchors
    search = combine.Search(conn, request, plans, sharing, nested,
                            Candidate, distinct, shared)
    root_required = [trait_ids[t] for t in request.root_required]
    root_forbidden = [trait_ids[t] for t in request.root_forbidden]
    scope = windows.scope_of(plans, root_required, root_forbidden, shared,
                             allowed, request.partitions)
    # No root condition but the partitions: a range read within them
    # (db_suppliers.suppliers) holds no root they leave out.
    gapless = scope.roots is None and not (
        scope.root_required or scope.root_forbidden or scope.trees)
    admitted, rest = _admitted(conn, scope, sample)
    if admitted is not None:
        if not admitted:
            return None
        # Those roots meet every root condition: only the providers'
        # own filters are left to judge.
        allowed = frozenset(admitted)
        scope = db_narrowing.Scope(allowed, (), (), (), scope.by_class)
        root_required = root_forbidden = []
    # Root filters leave gaps between a slice's roots.
    filtered = not gapless and (allowed is not None or bool(
        request.root_required or request.root_forbidden or
        request.partitions is not None))
    return _Prepared(search, class_ids, shared, allowed, root_required,
                     root_forbidden, filtered, scope, rest,
                     None if allowed is not None else request.partitions)


def _admitted(conn, scope, sample):
    """(the ids of the roots ``scope`` admits, or None for any root or
    too many to list; None, or when ``sample`` asks for them and they
    are many, the ids are a sample of them and this lists them all)."""
    if sample:
        found = db_narrowing.sampled_roots(
            conn, scope, windows.SAMPLED_ROOTS, random.getrandbits(30))
        if found is not None:
            roots, whole = found
            return roots, None if whole else (
                lambda: db_narrowing.admitted_roots(conn, scope))
    return db_narrowing.admitted_roots(conn, scope), None


def _find(conn, request, limit, randomize, nested):
    prepared = _prepare(conn, request, nested)
    if prepared is None:
        return Found([], {})
    return _found(conn, prepared, set(), limit, randomize, nested)


def _found(conn, prepared, seen, limit, randomize, nested):
    found = _every(conn, prepared, seen, limit, randomize)
    if randomize:
        random.shuffle(found)
    return Found(list(found), summaries.of_listing(conn, found, nested))


class _Listing(list):
    """Candidates; ``kept``: what the search read of their trees."""


def _every(conn, prepared, seen, limit, randomize=False):
    """Every candidate (up to ``limit``, in a ``_Listing``) over the
    whole cloud, a slice of roots at a time."""
    found = _Listing()
    found.kept = search_reads.Kept()
    for chunk in _slices(conn, prepared, randomize):
        found.extend(_in_slice(conn, prepared, chunk, seen, None
                               if limit is None else limit - len(found),
                               found.kept))
        if limit is not None and len(found) >= limit:
            break
    return found


def _in_slice(conn, prepared, chunk, seen, limit=None, kept=None):
    """The candidates anchored at a slice of roots (sorted ids), read by
    their range unless the filters leave too many gaps in it; ``kept``
    gains what was read of their trees (``combine.Search.slice``)."""
    return prepared.search.slice(
        chunk, seen, limit, not prepared.filtered or
        db_candidates.range_pays(conn, chunk), kept)


def _weighed(conn, found, nodes=None):
    """``Found`` for a claim: the summaries of the providers the
    candidates use (capacity and usage; no traits), their ids, and the
    room left in each candidate's tree per class (what ``spread`` and
    ``pack`` weigh: a host's room, not one of its devices'). ``nodes``:
    the search's own read of those trees and providers, when it has one
    (a window's)."""
    used = {u for c in found for u in c.allocations}
    if not used:
        return Found(found, {}, {}, {}, {})
    root_uuids = {c.root_uuid for c in found}
    if not nodes:
        nodes = {n.id: n for n in db_candidates.nodes_by_uuid(
            conn, used | root_uuids)}
        nodes.update(db_candidates.nodes(conn, {
            pid for pid, n in nodes.items() if n.uuid in root_uuids}))
    roots = {pid for pid, n in nodes.items() if n.uuid in root_uuids}
    db_providers.note_roots(conn, {pid: n.root_id
                                   for pid, n in nodes.items()})
    inventories = db_candidates.inventories(conn, set(nodes))
    used_by, tree_free = {}, collections.defaultdict(collections.Counter)
    tree_used = collections.Counter()
    for pid, node in nodes.items():
        resources = summaries.resources(inventories[pid])
        if node.root_id in roots:
            root_uuid = nodes[node.root_id].uuid
            for name, r in resources.items():
                tree_free[root_uuid][name] += r['capacity'] - r['used']
                tree_used[root_uuid] += r['used']
        if node.uuid in used:
            used_by[node.uuid] = summaries.Summary(
                node.uuid, None, None, resources, [])
    return Found(found, used_by, {n.uuid: pid for pid, n in nodes.items()},
                 tree_free, tree_used)


def _trait_ids(conn, request):
    """{name: id} of every trait the request names; 400 for unknown
    ones (root_required first, as Placement checks it first)."""
    ids = {}
    named = [request.root_required | request.root_forbidden]
    for group in request.groups:
        named.append(group.required | group.forbidden |
                     frozenset().union(*group.any_traits))
    for names in named:
        if names:
            found = db_traits.ids_by_name(conn, names)
            unknown = sorted(set(names) - set(found))
            if unknown:
                raise codes.Fault(codes.TRAIT_NOT_IN_BODY,
                                  'No such trait(s): %s.'
                                  % ', '.join(unknown))
            ids.update(found)
    return ids


def _class_ids(conn, request):
    names = set().union(*(g.resources for g in request.groups))
    found = db_classes.ids_by_name(conn, sorted(names))
    for group in request.groups:
        for name in group.resources:
            if name not in found:
                raise codes.Fault(codes.RESOURCE_CLASS_NOT_FOUND,
                                  'No such resource class %s.' % name)
    return found


def _plan(conn, group, class_ids, trait_ids):
    """How to search for one group; None when nothing can meet it."""
    in_tree = None
    if group.in_tree is not None:
        anchor = db_candidates.node(conn, group.in_tree)
        if anchor is None:
            return None
        in_tree = anchor.root_id
    classes = [(name, class_ids[name], amount)
               for name, amount in sorted(group.resources.items())]
    ids = db_filters.Filters(
        [trait_ids[t] for t in group.required],
        [[trait_ids[t] for t in names] for names in group.any_traits],
        [trait_ids[t] for t in group.forbidden],
        group.member_of, group.forbidden_aggregates)
    if group.single_provider:
        return _Plan(group, classes, ids, None, ids, in_tree, ids)
    # The unnumbered group: traits are judged on the providers a candidate
    # uses together (only a forbidden one can be ruled out per provider).
    own = db_filters.Filters((), (), ids.forbidden, (), ())
    tree = db_filters.Filters((), (), (), ids.member_of,
                              ids.forbidden_aggregates)
    shared = None
    if in_tree is None:
        shared = db_filters.Filters((), (), ids.forbidden, ids.member_of,
                                    ())
    return _Plan(group, classes, own, tree, shared, in_tree, ids)


def _slices(conn, prepared, randomize):
    """Sets of root ids, a slice at a time, in id order (from a random
    root on, wrapping round, when randomising)."""
    passes = [(None, None)]
    if randomize:
        bounds = db_candidates.root_id_range(conn)
        if bounds:
            start = random.randint(bounds[0], bounds[1])
            passes = [(start - 1, None), (None, start)]
    size = FIRST_SLICE
    for after, before in passes:
        while True:
            chunk = db_candidates.roots(conn, after, size, before,
                                        prepared.root_required,
                                        prepared.root_forbidden,
                                        prepared.allowed,
                                        prepared.partitions)
            if not chunk:
                break
            yield chunk
            after = chunk[-1]
            size = min(size * 2, LARGEST_SLICE)
