"""Allocation candidates: the ways a request for resources could be
placed right now (Placement's ``GET /allocation_candidates``, its
unnumbered request group).

A candidate takes every requested class from one provider each: providers
of one tree, plus sharing providers (MISC_SHARES_VIA_AGGREGATE) that share
an aggregate with that tree. Every provider used must pass the capacity
and unit rules of ``capacity``; together they must carry the required
traits and none of the forbidden ones. Candidates are advice read from one
snapshot: ``allocate`` judges again when the caller claims one.
"""

import itertools

from allocworker import policy
from allocworker.providers import snapshot as provider_snapshot
from allocworker import validation


def allocation_candidates(context, resources, required=(), forbidden=(),
                          member_of=(), in_tree=None, limit=None):
    """One item: ``allocation_requests`` ([{provider: {class: amount}}])
    and ``provider_summaries`` ({provider: summary}) of the providers
    involved. ``member_of`` is a list of aggregate sets, each of which
    the tree must meet."""
    validation.mapping(resources, 'resources')
    for name, amount in resources.items():
        validation.resource_class(name, 'resources key')
        validation.integer(amount, 'resources.%s' % name, minimum=1)
    policy.check(context, 'allocation_candidates', 'allocation candidates')
    world = provider_snapshot.read()
    required, forbidden = set(required), set(forbidden)
    requests, involved = [], set()
    seen = set()
    for root in sorted(world.trees):
        tree = world.trees[root]
        if in_tree is not None:
            anchor = world.providers.get(in_tree)
            if anchor is None or anchor.root_uuid != root:
                continue
        tree_aggs = world.aggregates_of(tree)
        if any(not (set(wanted) & tree_aggs) for wanted in member_of):
            continue
        pool = tree + world.sharing_with(set(tree), tree_aggs)
        options = []
        for name in sorted(resources):
            options.append([u for u in pool
                            if world.can_supply(u, name, resources[name])])
        for choice in itertools.product(*options):
            if not set(choice) & set(tree):
                continue
            traits = set().union(*(world.traits.get(u, set())
                                   for u in set(choice)))
            if not required <= traits or traits & forbidden:
                continue
            request = {}
            for name, uuid in zip(sorted(resources), choice):
                request.setdefault(uuid, {})[name] = resources[name]
            key = tuple(sorted((u, tuple(sorted(r.items())))
                               for u, r in request.items()))
            if key in seen:
                continue
            seen.add(key)
            requests.append(request)
            involved |= set(tree) | set(choice)
        if limit is not None and len(requests) >= limit:
            requests = requests[:limit]
            break
    return [{'allocation_requests': requests,
             'provider_summaries': {u: world.summary(u) for u in
                                    sorted(involved)},
             'status': 200}]
