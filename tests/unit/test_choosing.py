"""The order in which a claim tries candidates, and the group filter."""

import collections
import uuid

from allocworker.scheduling import choosing


def candidate(root, free, total=8, name='VCPU', more=None):
    providers = {root: {'capacity': {name: total},
                        'used': {name: total - free}, 'traits': []}}
    allocations = {root: {name: 1}}
    for provider, (other, other_free, other_total) in (more or {}).items():
        providers[provider] = {'capacity': {other: other_total},
                               'used': {other: other_total - other_free},
                               'traits': []}
        allocations[provider] = {other: 1}
    return {'root_uuid': root, 'allocations': allocations, 'mappings': {},
            'providers': providers}


def roots(candidates):
    return [c['root_uuid'] for c in candidates]


def test_spread_takes_the_most_free_first_and_pack_the_least():
    found = [candidate('a', 2), candidate('b', 7), candidate('c', 4)]
    assert roots(choosing.ordered(found, 'spread', 'x')) == ['b', 'c', 'a']
    assert roots(choosing.ordered(found, 'pack', 'x')) == ['a', 'c', 'b']


def test_classes_count_in_their_own_units():
    # Memory in MB would drown VCPUs if units were added up as they are.
    found = [candidate('a', 8, more={'a-mem': ('MEMORY_MB', 1024, 65536)}),
             candidate('b', 1, more={'b-mem': ('MEMORY_MB', 2048, 65536)})]
    assert roots(choosing.ordered(found, 'spread', 'x')) == ['a', 'b']


def test_ties_are_broken_per_consumer():
    found = [candidate('root-%d' % n, 4) for n in range(16)]
    firsts = collections.Counter(
        roots(choosing.ordered(found, 'spread', str(uuid.uuid4())))[0]
        for _ in range(200))
    # 200 consumers facing 16 equal hosts do not all start on one.
    assert len(firsts) > 8 and max(firsts.values()) < 40
    consumer = str(uuid.uuid4())
    assert choosing.ordered(found, 'spread', consumer) == \
        choosing.ordered(list(reversed(found)), 'spread', consumer)


def test_hosts_within_a_step_of_each_other_count_as_equal():
    found = [candidate('root-%d' % n, 1000 - n, total=1000)
             for n in range(5)]
    firsts = {roots(choosing.ordered(found, 'spread', str(uuid.uuid4())))[0]
              for _ in range(100)}
    assert len(firsts) == 5
    found.append(candidate('empty', 10, total=1000))
    assert roots(choosing.ordered(found, 'pack', 'x'))[0] == 'empty'


def test_roomiest_keeps_what_spread_counts_as_equal_to_the_best():
    found = [candidate('a', 8), candidate('b', 6), candidate('c', 8)]
    assert roots(choosing.roomiest(found)) == ['a', 'c']
    # Within a step of the best is as good as the best.
    close = [candidate('x', 1000, total=1000),
             candidate('y', 999, total=1000),
             candidate('z', 900, total=1000)]
    assert roots(choosing.roomiest(close)) == ['x', 'y']
    assert choosing.roomiest([]) == []
