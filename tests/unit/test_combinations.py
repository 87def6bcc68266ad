"""The lazy walk over request groups' options (``combine.Search.
_combinations``): the same combinations as ``itertools.product`` minus
those ``isolate`` rules out, in the same order; and with ``distinct``,
exactly one combination per distinct set of allocations."""

import collections
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from allocworker import capacity
from allocworker.scheduling import combine


def _search(isolated, twin):
    search = object.__new__(combine.Search)
    search.isolated, search.twin = isolated, twin
    return search


def _option(provider):
    return combine.Option((provider,), [(provider, 'X', 1)],
                          ['uuid-%d' % provider])


# (which of two shapes the group has, numbered): only the first group
# may be the unnumbered one, as in a request.
groups = st.tuples(
    st.tuples(st.integers(0, 1), st.booleans()),
    st.lists(st.tuples(st.integers(0, 1), st.just(True)), max_size=3)
).map(lambda first_and_rest: [first_and_rest[0]] + first_and_rest[1])
shapes = st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=4,
                           unique=True).map(sorted),
                  min_size=2, max_size=2)


def _setup(layout, lists, isolate):
    options = [[_option(p) for p in lists[shape]] for shape, _n in layout]
    isolated = [isolate and numbered for _s, numbered in layout]
    return options, isolated


def _allowed(combo, isolated):
    taken = [o.providers[0] for o, i in zip(combo, isolated) if i]
    return len(taken) == len(set(taken))


@settings(max_examples=200, deadline=None)
@given(groups, shapes, st.booleans())
def test_the_walk_is_product_minus_what_isolate_rules_out(
        layout, lists, isolate):
    options, isolated = _setup(layout, lists, isolate)
    walked = list(_search(isolated, [None] * len(options))
                  ._combinations(options))
    assert walked == [c for c in itertools.product(*options)
                      if _allowed(c, isolated)]


@settings(max_examples=200, deadline=None)
@given(groups, shapes, st.booleans())
def test_distinct_walks_one_combination_per_set_of_allocations(
        layout, lists, isolate):
    options, isolated = _setup(layout, lists, isolate)
    twin = []
    for i, (shape, numbered) in enumerate(layout):
        earlier = [j for j in range(i) if layout[j] == (shape, numbered)]
        twin.append(earlier[-1] if numbered and earlier else None)

    def allocated(combo):
        return frozenset(collections.Counter(
            (layout[i], o.providers[0]) for i, o in enumerate(combo))
            .items())

    every = {allocated(c) for c in itertools.product(*options)
             if _allowed(c, isolated)}
    walked = [allocated(c) for c in _search(isolated, twin)
              ._combinations(options)]
    assert len(walked) == len(set(walked))
    assert set(walked) == every


def test_eight_isolated_twins_on_eight_devices_walk_one_path():
    options = [[_option(p) for p in range(8)]] * 8
    search = _search([True] * 8, [None] + list(range(7)))
    assert [tuple(o.providers[0] for o in c)
            for c in search._combinations(options)] == [tuple(range(8))]


@settings(max_examples=200, deadline=None)
@given(groups, shapes, st.booleans(),
       st.lists(st.integers(0, 3), min_size=6, max_size=6))
def test_the_walk_drops_what_asks_more_of_a_provider_than_it_has(
        layout, lists, isolate, room):
    """With the inventories of a class several groups ask, the walk is
    the product minus what isolate rules out and minus what asks more of
    a provider than its room (``room[p]`` units left of X on provider
    p), in the same order."""
    options, isolated = _setup(layout, lists, isolate)
    search = _search(isolated, [None] * len(options))
    search.shared_classes = {'X'}
    inventories = {p: {'X': (capacity.Inventory(room[p], 0, 1, 3, 1, 1.0),
                             0)} for p in range(6)}

    def fits(combo):
        asked = collections.Counter(o.providers[0] for o in combo)
        return all(n <= min(room[p], 3) for p, n in asked.items())

    walked = list(search._combinations(options, inventories))
    assert walked == [c for c in itertools.product(*options)
                      if _allowed(c, isolated) and fits(c)]


def test_a_slice_of_flat_trees_is_judged_in_one_batch():
    # A root whose every group is met one way makes one candidate at most.
    anchors = list(range(100))
    found = [{a: {a} for a in anchors},
             {a: {'VCPU': [a], 'MEMORY_MB': [a]} for a in anchors}]
    assert list(combine._batches(anchors, 1000, [], found)) == [anchors]


def test_a_tree_of_many_ways_is_judged_before_the_rest_are_read():
    # Eight devices for eight numbered groups: 8^8 ways on the first root.
    anchors = list(range(50))
    found = [{a: set(range(8)) for a in anchors} for _group in range(8)]
    result = []
    batches = combine._batches(anchors, 1000, result, found)
    assert next(batches) == [0]
    result.extend(range(1000))
    # As many as the first root's candidates say will do: a few more.
    assert len(next(batches)) == 16
