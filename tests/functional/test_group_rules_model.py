"""Group rules against a model: random sequences of allocates, claims,
deletes, aggregate moves and rule updates over two racks of two hosts
give the statuses a sequential model of design §3's rules predicts, on
every backend (the model below is written from the design, not from
groups/rules.py)."""

import collections
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pytest

from allocworker.allocations import writes
from allocworker.groups import membership
from allocworker.groups import report
from allocworker.groups import topology
from allocworker.providers import aggregates
from allocworker.providers import rules as providers
from allocworker.scheduling import claims

pytestmark = pytest.mark.usefixtures('service_layer')

HOSTS, CONSUMERS = 4, 5
RULE_SETS = [
    [{'policy': 'anti-affinity', 'scope': 'LEVEL'}],
    [{'policy': 'anti-affinity', 'scope': 'LEVEL', 'max_per_domain': 2}],
    [{'policy': 'affinity', 'scope': 'LEVEL'}],
    [{'policy': 'spread', 'scope': 'LEVEL', 'max_skew': 1}],
    [{'policy': 'anti-affinity'},
     {'policy': 'spread', 'scope': 'LEVEL', 'max_skew': 1}],
]


class Model(object):
    """Where each consumer is, the rack of each host, the rules."""

    def __init__(self, rules):
        self.rules = rules
        self.rack = {h: h // 2 for h in range(HOSTS)}
        self.at = {}   # consumer: host

    def admits(self, consumer, host):
        """Whether every rule lets ``consumer`` move to ``host``."""
        return all(self._keeps(rule, consumer, host) for rule in self.rules)

    def _keeps(self, rule, consumer, host):
        per_root = rule.get('scope', 'root') == 'root'

        def domain(h):
            return h if per_root else self.rack[h]
        old = self.at.get(consumer)
        if old is not None and domain(old) == domain(host):
            return True   # no domain added
        after = dict(self.at)
        after[consumer] = host
        counts = collections.Counter(domain(h) for h in after.values())
        if rule['policy'] == 'anti-affinity':
            return counts[domain(host)] <= rule.get('max_per_domain', 1)
        if rule['policy'] == 'affinity':
            before = {domain(h) for h in self.at.values()}
            return len(counts) <= 1 or domain(host) in before
        # Eligible: every domain with a host (all offer VCPU).
        every = {domain(h) for h in range(HOSTS)}
        least = min(counts.get(d, 0) for d in every)
        return counts[domain(host)] <= least + rule.get('max_skew', 1)


def operations():
    consumer = st.integers(0, CONSUMERS - 1)
    host = st.integers(0, HOSTS - 1)
    return st.lists(st.one_of(
        st.tuples(st.just('allocate'), consumer, host),
        st.tuples(st.just('claim'), consumer, st.just(0)),
        st.tuples(st.just('delete'), consumer, st.just(0)),
        st.tuples(st.just('move'), host, st.just(0)),
        st.tuples(st.just('rules'), st.integers(0, len(RULE_SETS) - 1),
                  st.just(0))), min_size=1, max_size=12)


class Cloud(object):
    """The same over the service layer: hosts, racks, a group."""

    def __init__(self, rules_index):
        self.level = 'm-%s' % uuid.uuid4().hex[:8]
        self.racks = [str(uuid.uuid4()), str(uuid.uuid4())]
        self.hosts = []
        for n in range(HOSTS):
            host = str(uuid.uuid4())
            providers.create_provider(None, host, 'h-' + host)
            item, = providers.set_inventories(None, host, 0, {
                'VCPU': {'total': 100}})
            aggregates.set_provider_aggregates(
                None, host, item['generation'], [self.racks[n // 2]])
            self.hosts.append(host)
        topology.set_topology_level(None, self.level, {
            a: 'rack-%d' % n for n, a in enumerate(self.racks)})
        self.group = str(uuid.uuid4())
        item, = membership.create_group(None, self.group, 'model',
                                        rules=self.rules(rules_index))
        assert item['status'] == 200, item
        self.consumers = [str(uuid.uuid4()) for _ in range(CONSUMERS)]
        self.generations = {}

    def rules(self, index):
        return [dict(r, scope=self.level) if r.get('scope') == 'LEVEL'
                else dict(r) for r in RULE_SETS[index]]

    def item(self, n, **fields):
        consumer = self.consumers[n]
        return dict({'consumer_uuid': consumer,
                     'consumer_generation': self.generations.get(consumer),
                     'project_id': 'model', 'user_id': 'model',
                     'group_uuid': self.group}, **fields)

    def answered(self, n, item):
        if item['status'] == 200:
            self.generations[self.consumers[n]] = \
                item['consumer_generation']
        return item


def _step(cloud, model, op, a, b):
    if op == 'allocate':
        item, = writes.allocate(None, [cloud.item(
            a, allocations={cloud.hosts[b]: {'VCPU': 1}})])
        expected = 200 if model.admits(a, b) else 409
        assert item['status'] == expected, (op, a, b, item)
        if cloud.answered(a, item)['status'] == 200:
            model.at[a] = b
    elif op == 'claim':
        item, = claims.claim(None, [cloud.item(a, request={'groups': [{
            'resources': {'VCPU': 1},
            'member_of': ['in:' + ','.join(cloud.racks)]}]})])
        fits = [h for h in range(HOSTS) if model.admits(a, h)]
        if not fits:
            assert item.get('code') == 'group.policy_violation', item
            return
        assert item['status'] == 200, (op, a, fits, item)
        host = cloud.hosts.index(item['root_uuid'])
        assert host in fits, (host, fits)
        cloud.answered(a, item)
        model.at[a] = host
    elif op == 'delete':
        item, = writes.allocate(None, [cloud.item(a, allocations={})])
        if cloud.answered(a, item)['status'] == 200:
            model.at.pop(a, None)
    elif op == 'move':
        rack = 1 - model.rack[a]
        host, = providers.get_providers(None, [cloud.hosts[a]])
        item, = aggregates.set_provider_aggregates(
            None, cloud.hosts[a], host['generation'], [cloud.racks[rack]])
        assert item['status'] == 200, item
        model.rack[a] = rack
    else:
        group, = report.get_groups(None, [cloud.group])
        item, = membership.update_group(None, cloud.group,
                                        group['generation'],
                                        cloud.rules(a), force=True)
        assert item['status'] == 200, item
        model.rules = cloud.rules(a)


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(st.integers(0, len(RULE_SETS) - 1), operations())
def test_statuses_follow_a_sequential_model_of_the_rules(rules_index, ops):
    cloud = Cloud(rules_index)
    model = Model(cloud.rules(rules_index))
    for op, a, b in ops:
        _step(cloud, model, op, a, b)
