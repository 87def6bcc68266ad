"""Group rules at failure-domain scope, as pure logic (groups/rules.py)."""

import hypothesis
from hypothesis import strategies as st
import pytest

from allocworker import codes
from allocworker.groups import rules

RACK_OF = {1: 'r1', 2: 'r1', 3: 'r2', 4: 'r2', 5: 'r3', 6: 'r3'}


def member(*roots, kind='INSTANCE'):
    return rules.Member(kind, set(roots))


def rule(**fields):
    return rules.parse([dict({'scope': 'rack'}, **fields)])[0]


def judge(the_rule, before, mover, roots, kind='INSTANCE', reach=None):
    after = dict(before)
    after[mover] = member(*roots, kind=kind)
    eligible = (lambda m, per_domain: reach) if reach else None
    return rules.breaches(the_rule, before, after, {mover}, RACK_OF,
                          eligible)


def test_parse_fills_defaults_and_shows_what_applies():
    spread, = rules.parse([{'policy': 'spread', 'scope': 'rack'}])
    assert spread.max_skew == 1 and spread.enforcement == 'hard'
    assert rules.shown(spread) == {
        'policy': 'spread', 'scope': 'rack', 'max_skew': 1,
        'min_domains': None, 'enforcement': 'hard', 'consumer_types': None}
    anti, = rules.parse([{'policy': 'anti-affinity'}])
    assert anti.scope == 'root' and anti.max_per_domain == 1


@pytest.mark.parametrize('raw, field', [
    ([], 'rules'), ([{'policy': 'pack'}], 'rules[0].policy'),
    ([{'policy': 'spread', 'max_per_domain': 2}], 'max_per_domain'),
    ([{'policy': 'affinity', 'scope': 'Rack'}], 'rules[0].scope'),
    ([{'policy': 'affinity', 'enforcement': 'maybe'}], 'enforcement'),
    ([{'policy': 'spread', 'max_skew': 0}], 'rules[0].max_skew'),
    ([{'policy': 'affinity', 'consumer_types': []}], 'consumer_types'),
    ([{'policy': 'affinity', 'colour': 'red'}], 'colour'),
])
def test_bad_rules_name_the_field(raw, field):
    with pytest.raises(codes.Fault) as caught:
        rules.parse(raw)
    assert caught.value.code == codes.INVALID_REQUEST
    assert field in caught.value.detail


def test_the_1_0_policies_are_one_rule_at_scope_root():
    for policy, limit in (('anti-affinity', 2), ('soft-anti-affinity', 1),
                          ('affinity', None), ('soft-affinity', None)):
        one = rules.from_policy(policy, limit)
        assert one.scope == 'root'
        assert rules.as_policy([one]) == (policy, one.max_per_domain)
    assert rules.as_policy([rule(policy='spread')]) == (None, None)


def test_anti_affinity_counts_members_per_domain():
    anti = rule(policy='anti-affinity', max_per_domain=2)
    before = {'a': member(1), 'b': member(2)}
    assert judge(anti, before, 'me', {3}) == []
    assert judge(anti, before, 'me', {1}) == [rules.Breach('me', 'r1')]


def test_affinity_spans_at_most_max_domains():
    aff = rule(policy='affinity', max_domains=2)
    before = {'a': member(1), 'b': member(3)}
    assert judge(aff, before, 'me', {2}) == []
    assert judge(aff, before, 'me', {5}) == [rules.Breach('me', 'r3')]


def test_books_over_a_rule_refuse_only_what_adds_to_it():
    aff = rule(policy='affinity')
    # An aggregate moved: the members span two racks already.
    before = {'a': member(1), 'b': member(3)}
    assert judge(aff, before, 'me', {2}) == []
    assert judge(aff, before, 'me', {5}) == [rules.Breach('me', 'r3')]


def test_spread_keeps_every_domain_within_max_skew_of_the_least():
    spread = rule(policy='spread', max_skew=1)
    everywhere = (3, {'r1', 'r2', 'r3'})
    before = {'a': member(1), 'b': member(3)}
    assert judge(spread, before, 'me', {5}, reach=everywhere) == []
    assert judge(spread, before, 'me', {2}, reach=everywhere) == \
        [rules.Breach('me', 'r1')]
    # Only r1 and r2 offer what the member holds: r3 does not count.
    assert judge(spread, before, 'me', {2}, reach=(2, {'r1', 'r2'})) == []


def test_spread_min_domains_makes_the_minimum_zero():
    spread = rule(policy='spread', max_skew=1, min_domains=4)
    before = {'a': member(1), 'b': member(3), 'c': member(5)}
    assert judge(spread, before, 'me', {2},
                 reach=(3, {'r1', 'r2', 'r3'})) == \
        [rules.Breach('me', 'r1')]


def test_a_root_without_a_domain_keeps_no_rule():
    anti = rule(policy='anti-affinity')
    assert judge(anti, {}, 'me', {99}) == [rules.Breach('me', None)]


def test_a_root_set_aside_is_no_domain_and_refuses_nothing_alone():
    # Level partition: a root of ``shared`` is labelled None.
    sites = {1: 'east', 2: 'east', 3: 'west', 7: None}
    anti = rules.parse([{'policy': 'anti-affinity',
                         'scope': 'partition'}])[0]

    def breaches(before, roots):
        after = dict(before, me=member(*roots))
        return rules.breaches(anti, before, after, {'me'}, sites)

    beside = member(1, 7)
    assert rules.domains(beside, sites) == {'east'}
    assert not rules.nowhere(beside, sites)
    assert rules.counts({'a': beside}, sites) == {'east': 1}
    assert breaches({}, {3, 7}) == []
    assert breaches({'a': beside}, {2, 7}) == [rules.Breach('me', 'east')]
    # Set aside only: no domain at all, as a root without one.
    assert rules.nowhere(member(7), sites)
    assert breaches({}, {7}) == [rules.Breach('me', None)]
    # Books already there refuse only what adds to them.
    after = {'me': member(7)}
    assert rules.breaches(anti, after, after, {'me'}, sites) == []


def test_consumer_types_leave_the_others_unjudged_and_uncounted():
    anti = rule(policy='anti-affinity', consumer_types=['INSTANCE'])
    before = {'vol': member(1, kind='VOLUME')}
    assert judge(anti, before, 'me', {2}) == []
    assert judge(anti, {'a': member(1)}, 'vol2', {2}, kind='VOLUME') == []


@hypothesis.given(st.lists(st.sampled_from(sorted(RACK_OF)), max_size=12),
                  st.integers(1, 3))
def test_anti_affinity_placed_one_by_one_never_exceeds_its_limit(
        roots, limit):
    anti = rule(policy='anti-affinity', max_per_domain=limit)
    placed = {}
    for n, root in enumerate(roots):
        if not judge(anti, placed, 'm%d' % n, {root}):
            placed['m%d' % n] = member(root)
    per_rack = rules.counts(placed, RACK_OF)
    assert all(count <= limit for count in per_rack.values())
    assert rules.satisfied(anti, per_rack, None)


@hypothesis.given(st.lists(st.sampled_from(sorted(RACK_OF)), max_size=16),
                  st.integers(1, 2))
def test_spread_placed_one_by_one_never_exceeds_its_skew(roots, skew):
    spread = rule(policy='spread', max_skew=skew)
    reach = (3, {'r1', 'r2', 'r3'})
    placed = {}
    for n, root in enumerate(roots):
        if not judge(spread, placed, 'm%d' % n, {root}, reach=reach):
            placed['m%d' % n] = member(root)
    per_rack = rules.counts(placed, RACK_OF)
    assert rules.skew(spread, per_rack, reach) <= skew


def test_spread_reads_the_eligible_domains_only_past_max_skew():
    spread = rule(policy='spread', max_skew=2)
    asked = []

    def eligible(mover, per_domain):
        asked.append(dict(per_domain))
        return 3, {'r1', 'r2', 'r3'}

    before = {'a': member(1), 'b': member(3)}
    # r1 holds 2 after the move: within max_skew whatever the minimum is.
    assert rules.breaches(spread, before, dict(before, me=member(2)),
                          {'me'}, RACK_OF, eligible) == []
    assert asked == []
    crowded = dict(before, c=member(2))
    # r1 holds 3 and r3 none: past max_skew, read, and refused.
    assert rules.breaches(spread, crowded, dict(crowded, me=member(1)),
                          {'me'}, RACK_OF, eligible) == [
        rules.Breach('me', 'r1')]
    assert asked == [{'r1': 3, 'r2': 1}]
