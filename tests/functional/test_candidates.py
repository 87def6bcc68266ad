"""Allocation candidates through the service layer on every backend: the
request syntax's rules (numbered groups, group_policy, sharing providers,
same_subtree, root_required, forbidden and any-of traits and aggregates,
limit) judged by the SQL search. Each test asks for a resource class of
its own, so providers of other tests in the shared database never match.
"""

import uuid

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from allocworker.allocations import writes as allocations
from allocworker import codes
from allocworker.db import api as db
from allocworker.providers import aggregates
from allocworker.providers import resource_classes
from allocworker.providers import rules as providers
from allocworker.providers import traits
from allocworker.scheduling import candidates
from allocworker.scheduling import placement_query
from allocworker.scheduling import request as request_syntax
from allocworker.scheduling import summaries

pytestmark = pytest.mark.usefixtures('service_layer')
SHARES = 'MISC_SHARES_VIA_AGGREGATE'


def custom(kind='class'):
    name = 'CUSTOM_T%s' % uuid.uuid4().hex[:12].upper()
    if kind == 'class':
        assert resource_classes.create_resource_class(
            None, name)[0]['status'] == 200
    else:
        assert traits.create_trait(None, name)[0]['status'] == 200
    return name


def provider(inventories=None, parent=None, with_traits=(), aggs=()):
    uuid_ = str(uuid.uuid4())
    item, = providers.create_provider(None, uuid_, 'rp-' + uuid_, parent)
    if inventories:
        item, = providers.set_inventories(
            None, uuid_, item['generation'],
            {name: {'total': total} for name, total in inventories.items()})
    if with_traits:
        item, = traits.set_provider_traits(None, uuid_, item['generation'],
                                           list(with_traits))
    if aggs:
        item, = aggregates.set_provider_aggregates(
            None, uuid_, item['generation'], list(aggs))
    assert item['status'] == 200, item
    return uuid_


def find(limit=None, **raw):
    raw.setdefault('groups', [])
    return candidates.find(request_syntax.parse_request(raw), limit)


def placements(found):
    return sorted(sorted((p, sorted(r.items()))
                         for p, r in c.allocations.items())
                  for c in found.candidates)


def numa_host(cls, per_numa=4, root_traits=(), numa_traits=((), ())):
    root = provider(with_traits=root_traits)
    numas = [provider({cls: per_numa}, root, numa_traits[n])
             for n in range(2)]
    return root, numas


def test_numbered_groups_isolate_or_share_one_provider():
    cls = custom()
    root, (n0, n1) = numa_host(cls)
    # Group 0 is the unnumbered group: isolate separates groups 1 and 2.
    groups = [{'resources': {cls: 1}}, {'resources': {cls: 1}},
              {'resources': {cls: 1}}]
    isolated = find(groups=groups, group_policy='isolate')
    assert {c.root_uuid for c in isolated.candidates} == {root}
    assert len(isolated.candidates) == 4
    for candidate in isolated.candidates:
        assert candidate.mappings['1'] != candidate.mappings['2']
    anywhere = find(groups=groups, group_policy='none')
    assert len(anywhere.candidates) == 8
    assert set(anywhere.providers) == {root, n0, n1}
    assert anywhere.providers[n0].resources[cls] == {'capacity': 4,
                                                     'used': 0}
    three = groups + [{'resources': {cls: 1}}]
    assert find(groups=three, group_policy='isolate').candidates == []


def test_a_provider_two_groups_draw_on_must_hold_both():
    cls = custom()
    root, (n0, n1) = numa_host(cls, per_numa=3)
    both = find(groups=[{'resources': {cls: 2}}, {'resources': {cls: 2}}])
    # 2 + 2 fits no single NUMA node, so each group takes its own (two
    # candidates: the same allocations, mapped the two ways round).
    each = sorted([(n0, [(cls, 2)]), (n1, [(cls, 2)])])
    assert placements(both) == [each, each]
    assert sorted(c.mappings['1'] for c in both.candidates) == sorted(
        [[n0], [n1]])


def test_sharing_provider_serves_the_unnumbered_group_not_with_in_tree():
    cpu, disk = custom(), custom()
    agg = str(uuid.uuid4())
    host = provider({cpu: 8}, aggs=[agg])
    shared = provider({disk: 100}, with_traits=[SHARES], aggs=[agg])
    found = find(groups=[{'resources': {cpu: 1, disk: 10}}])
    assert placements(found) == [sorted([(host, [(cpu, 1)]),
                                         (shared, [(disk, 10)])])]
    assert found.candidates[0].root_uuid == host
    assert found.candidates[0].mappings == {'0': sorted([host, shared])}
    assert placements(find(groups=[{'resources': {cpu: 1, disk: 10},
                                    'in_tree': host}])) == []
    # A numbered group may be met by the sharing provider too.
    granular = find(groups=[{'resources': {cpu: 1}},
                            {'resources': {disk: 10}}])
    assert placements(granular) == placements(found)


def test_a_sharing_provider_alone_is_one_candidate_for_all_it_serves():
    disk = custom()
    agg = str(uuid.uuid4())
    # Three trees it serves, its own tree among them.
    for _ in range(2):
        provider({custom(): 8}, aggs=[agg])
    shared = provider({disk: 100}, with_traits=[SHARES], aggs=[agg])
    for resources in ('resources', 'resources1'):
        for limit in (None, 1000):
            request, _limit = placement_query.parse_query(
                {resources: ['%s:10' % disk]}, 36)
            found = candidates.find(request, limit)
            assert placements(found) == [[(shared, [(disk, 10)])]]


def test_traits_any_of_and_forbidden_per_group():
    cls = custom()
    gold, silver = custom('trait'), custom('trait')
    root, (n0, n1) = numa_host(cls, numa_traits=([gold], [silver]))
    only = find(groups=[{'resources': {cls: 1}},
                        {'resources': {cls: 1}, 'required': [gold]}])
    assert {tuple(c.mappings['1']) for c in only.candidates} == {(n0,)}
    either = find(groups=[{'resources': {cls: 1}},
                          {'resources': {cls: 1},
                           'required': ['in:%s,%s' % (gold, silver)]}])
    chosen = {tuple(c.mappings['1']) for c in either.candidates}
    assert chosen == {(n0,), (n1,)}
    not_gold = find(groups=[{'resources': {cls: 1}, 'required': ['!' + gold]}])
    assert {tuple(c.mappings['0']) for c in not_gold.candidates} == {(n1,)}


def test_root_required_filters_whole_trees():
    cls = custom()
    enabled = custom('trait')
    wanted, _ = numa_host(cls, root_traits=[enabled])
    other, _ = numa_host(cls)
    roots = {c.root_uuid for c in find(
        groups=[{'resources': {cls: 1}}],
        root_required=[enabled]).candidates}
    assert roots == {wanted}
    roots = {c.root_uuid for c in find(
        groups=[{'resources': {cls: 1}}],
        root_required=['!' + enabled]).candidates}
    assert roots == {other}


def test_same_subtree_keeps_groups_under_one_provider():
    cls, vf = custom(), custom()
    root = provider()
    numa = [provider({cls: 4}, root) for _ in range(2)]
    nics = [provider({vf: 4}, numa[n]) for n in range(2)]
    found = find(groups=[{'resources': {cls: 1}}, {'resources': {cls: 1}},
                         {'resources': {vf: 1}}],
                 same_subtree=[[1, 2]])
    for candidate in found.candidates:
        below = numa.index(candidate.mappings['1'][0])
        assert candidate.mappings['2'] == [nics[below]]
    assert len(found.candidates) == 4


def test_forbidden_and_any_of_aggregates():
    cls = custom()
    good, bad = str(uuid.uuid4()), str(uuid.uuid4())
    inside = provider({cls: 1}, aggs=[good])
    banned = provider({cls: 1}, aggs=[good, bad])
    outside = provider({cls: 1})
    member = find(groups=[{'resources': {cls: 1},
                           'member_of': ['in:%s,%s' % (good, bad)]}])
    assert {c.root_uuid for c in member.candidates} == {inside, banned}
    allowed = find(groups=[{'resources': {cls: 1}, 'member_of': ['!' + bad]}])
    assert {c.root_uuid for c in allowed.candidates} == {inside, outside}


def test_capacity_in_use_and_limit():
    cls = custom()
    hosts = [provider({cls: 4}) for _ in range(5)]
    item = allocations.allocate(None, [{
        'consumer_uuid': str(uuid.uuid4()), 'consumer_generation': None,
        'project_id': 'p', 'user_id': 'u',
        'allocations': {hosts[0]: {cls: 3}}}])[0]
    assert item['status'] == 200
    found = find(groups=[{'resources': {cls: 2}}])
    assert {c.root_uuid for c in found.candidates} == set(hosts[1:])
    assert found.providers[hosts[1]].resources[cls]['used'] == 0
    limited = find(limit=2, groups=[{'resources': {cls: 2}}])
    assert len(limited.candidates) == 2
    assert set(limited.providers) == {c.root_uuid
                                      for c in limited.candidates}


def test_find_reads_inside_an_open_write_transaction():
    cls = custom()
    host = provider({cls: 2})
    request = request_syntax.parse_request(
        {'groups': [{'resources': {cls: 1}}]})
    with db.writer() as conn:
        found = candidates.find(request, conn=conn)
    assert [c.root_uuid for c in found.candidates] == [host]


def test_candidates_and_summaries_are_read_in_one_snapshot(monkeypatch):
    """A write that commits while the search runs is seen by none of its
    reads: the summaries show the usage the candidates were judged on."""
    cls = custom()
    host = provider({cls: 4})
    read_summaries = summaries.of_listing

    def summaries_after_a_write(conn, found, nested):
        item, = allocations.allocate(None, [{
            'consumer_uuid': str(uuid.uuid4()), 'consumer_generation': None,
            'project_id': 'p', 'user_id': 'u',
            'allocations': {host: {cls: 3}}}])
        assert item['status'] == 200
        return read_summaries(conn, found, nested)

    monkeypatch.setattr(summaries, 'of_listing', summaries_after_a_write)
    found = find(groups=[{'resources': {cls: 2}}])
    assert [c.root_uuid for c in found.candidates] == [host]
    assert found.providers[host].resources[cls]['used'] == 0


@pytest.mark.parametrize('group, code', [
    ({'resources': {'CUSTOM_NEVER_MADE_CLASS': 1}},
     codes.RESOURCE_CLASS_NOT_FOUND),
    ({'resources': {'VCPU': 1}, 'required': ['CUSTOM_NEVER_MADE_TRAIT']},
     codes.TRAIT_NOT_IN_BODY),
])
def test_unknown_names_are_400s(group, code):
    with pytest.raises(codes.Fault) as caught:
        find(groups=[group])
    assert caught.value.code == code


@settings(max_examples=40, deadline=None)
@given(groups=st.lists(st.dictionaries(
    st.sampled_from(['resources', 'required', 'member_of', 'in_tree']),
    st.none() | st.integers() | st.text(max_size=5) |
    st.lists(st.text(max_size=5), max_size=2), max_size=3), max_size=3))
def test_malformed_requests_are_400s_naming_the_field(groups):
    try:
        find(groups=groups)
    except codes.Fault as fault:
        assert fault.code.status == 400
        assert 'request.groups' in fault.detail


def test_randomized_search_finds_the_same_candidates_in_some_order():
    cls = custom()
    hosts = {provider({cls: 1}) for _ in range(6)}
    request = request_syntax.parse_request(
        {'groups': [{'resources': {cls: 1}}]})
    every = candidates.find(request, randomize=True)
    assert {c.root_uuid for c in every.candidates} == hosts
    assert len(every.candidates) == 6
    some = candidates.find(request, limit=3, randomize=True)
    assert len({c.root_uuid for c in some.candidates}) == 3
    assert {c.root_uuid for c in some.candidates} <= hosts
