"""Filters choose a claim's window (``db/search/narrowing.py``): every shape of
filter Nova sends, alone and combined, lands where it says, and a claim
never answers ``capacity.exceeded`` while a root its filters admit has
room, whether the admitted roots are listed (a few) or the room index
is walked under the filters (many), under windows of one provider.
"""

import random
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pytest

from tests.functional.helpers import (
    alloc_item, allocate, in_parallel, one, provider)
from tests.functional.test_claims import _decorate, claim, slot_class

WORKER_CONFIG = """
[database]
max_overflow = 10
[scheduling]
window_size = 1
"""

pytestmark = pytest.mark.usefixtures('service_layer')

ZONE, OTHER_ZONE = str(uuid.uuid4()), str(uuid.uuid4())
DISABLED = 'COMPUTE_STATUS_DISABLED'


class Cloud(object):
    """Flat roots of one class of their own, each with what it carries
    (``traits``, ``aggregates``) and its room, as the model judges."""

    def __init__(self, rpc, name, rare, layout):
        self.name, self.rare = name, rare
        self.roots, self.facts = [], {}
        for total, traits, aggregates in layout:
            root, generation = provider(rpc, {name: {'total': total}})
            _decorate(root, generation, traits, aggregates)
            self.roots.append(root)
            self.facts[root] = (set(traits), set(aggregates))
        self.room = {root: total for root, (total, _t, _a)
                     in zip(self.roots, layout)}

    def admits(self, root, group, root_required=()):
        traits, aggregates = self.facts[root]
        ok = all(self._trait(t, traits) for t in group.get('required', ()))
        ok = ok and all(self._trait(t, traits) for t in root_required)
        ok = ok and all(self._aggregate(a, aggregates)
                        for a in group.get('member_of', ()))
        return ok and group.get('in_tree', root) == root

    @staticmethod
    def _trait(asked, traits):
        if asked.startswith('!'):
            return asked[1:] not in traits
        if asked.startswith('in:'):
            return bool(traits & set(asked[3:].split(',')))
        return asked in traits

    @staticmethod
    def _aggregate(asked, aggregates):
        if asked.startswith('!in:'):
            return not aggregates & set(asked[4:].split(','))
        if asked.startswith('in:'):
            return bool(aggregates & set(asked[3:].split(',')))
        return asked in aggregates

    def fitting(self, request):
        group, = request['groups']
        amount = group['resources'][self.name]
        return [r for r in self.roots if self.room[r] >= amount and
                self.admits(r, group, request.get('root_required', ()))]


def _layout(count, seed):
    """Roots of 1-3 units: some in the zone or the other one, some with
    the rare trait, some disabled."""
    draw = random.Random(seed)
    return [(draw.randint(1, 3),
             draw.sample(['RARE', DISABLED], draw.randint(0, 2)),
             draw.sample([ZONE, OTHER_ZONE], draw.randint(0, 1)))
            for _ in range(count)]


def _traits(rare, layout):
    return [(total, [rare if t == 'RARE' else t for t in traits], aggs)
            for total, traits, aggs in layout]


@pytest.fixture(scope='module')
def cloud(rpc):
    from allocworker.providers import traits as provider_traits
    rare = 'CUSTOM_RARE_%s' % uuid.uuid4().hex[:8].upper()
    assert provider_traits.create_trait(None, rare)[0]['status'] == 200
    return Cloud(rpc, slot_class(rpc), rare,
                 _traits(rare, _layout(12, 36)))


def _filters(cloud):
    """One group's filters, drawn from what the cloud's roots carry (never
    one that both asks and forbids a name: that is a 400)."""
    rare, either = cloud.rare, 'in:%s,%s' % (cloud.rare, DISABLED)
    traits = st.sampled_from([
        [rare], ['!' + rare], [DISABLED], ['!' + DISABLED],
        [rare, '!' + DISABLED], ['!' + rare, '!' + DISABLED], [either]])
    aggregates = st.sampled_from([
        [ZONE], [OTHER_ZONE], ['in:%s,%s' % (ZONE, OTHER_ZONE)],
        ['!in:' + ZONE], ['!in:%s,%s' % (ZONE, OTHER_ZONE)],
        [ZONE, '!in:' + OTHER_ZONE]])
    return st.fixed_dictionaries({}, optional={
        'required': traits, 'member_of': aggregates,
        'in_tree': st.sampled_from(cloud.roots)})


def _request(cloud, group, amount, root_required):
    request = {'groups': [dict(group, resources={cloud.name: amount})]}
    if root_required:
        request['root_required'] = root_required
    return request


def _claimed(context, request, strategy):
    from allocworker.scheduling import claims
    consumer = str(uuid.uuid4())
    item, = claims.claim(context, [{
        'consumer_uuid': consumer, 'consumer_generation': None,
        'project_id': 'test-project', 'user_id': 'test-user',
        'request': request, 'strategy': strategy}])
    return consumer, item


@pytest.mark.parametrize('listed', [True, False],
                         ids=['roots-listed', 'index-walked'])
def test_claims_land_where_their_filters_say_as_a_model_does(
        cloud, listed, monkeypatch):
    from allocworker.conf import CONF
    from allocworker.db.search import narrowing
    from allocworker.allocations import writes
    if not listed:
        monkeypatch.setattr(narrowing, 'FEW_ROOTS', 0)
    CONF.set_override('window_size', 1, 'scheduling')
    context = None  # the service layer's own caller, as the CLI is

    @settings(max_examples=40, deadline=None, suppress_health_check=list(
        HealthCheck))
    @given(steps=st.lists(st.tuples(
        _filters(cloud), st.integers(1, 2),
        st.lists(st.sampled_from([cloud.rare, '!' + DISABLED]),
                 max_size=1),
        st.sampled_from(['spread', 'pack'])), min_size=1, max_size=4))
    def check(steps):
        placed = []
        try:
            for group, amount, root_required, strategy in steps:
                request = _request(cloud, group, amount, root_required)
                fitting = cloud.fitting(request)
                _consumer, item = _claimed(context, request, strategy)
                if not fitting:
                    assert item['code'] == 'capacity.exceeded', item
                    continue
                assert item['status'] == 200, (item, fitting)
                assert item['root_uuid'] in fitting, (item, fitting)
                placed.append((item, amount))
                cloud.room[item['root_uuid']] -= amount
        finally:
            for item, amount in placed:
                writes.allocate(context, [{
                    'consumer_uuid': item['consumer_uuid'],
                    'consumer_generation': item['consumer_generation'],
                    'project_id': 'test-project', 'user_id': 'test-user',
                    'allocations': {}}])
                cloud.room[item['root_uuid']] += amount

    try:
        check()
    finally:
        CONF.clear_override('window_size', 'scheduling')


def test_every_shape_lands_right_under_concurrent_claims_and_allocates(rpc):
    """Four zone roots, six rare ones, two disabled, twelve plain, eight
    units each (the plain ones, which allocates aim at random and claims
    may take too, sixteen): every claim and allocate fits, so every one
    answers 200 and each claim lands where its filters say."""
    from allocworker.providers import traits as provider_traits
    rare = 'CUSTOM_RARE_%s' % uuid.uuid4().hex[:8].upper()
    assert provider_traits.create_trait(None, rare)[0]['status'] == 200
    zone = str(uuid.uuid4())
    name = slot_class(rpc)
    cloud = Cloud(rpc, name, rare, [(8, [], [zone])] * 4 +
                  [(8, [rare], [])] * 6 + [(8, [DISABLED], [])] * 2 +
                  [(16, [], [])] * 12)
    plain = cloud.roots[12:]
    shapes = ([{'member_of': [zone]}] * 12 + [{'required': [rare]}] * 8 +
              [{'required': ['!' + DISABLED]}] * 20 +
              [{'in_tree': random.choice(plain)} for _ in range(8)])
    jobs = [('claim', shape) for shape in shapes] + [('allocate', None)] * 16
    jobs += [('root_required', None)] * 8
    random.shuffle(jobs)

    def run(job):
        kind, shape = job
        consumer = str(uuid.uuid4())
        if kind == 'allocate':
            root = random.choice(plain)
            return root, shape, allocate(rpc, consumer, {root: {name: 1}})
        request = {'groups': [dict(shape or {}, resources={name: 1})]}
        if kind == 'root_required':
            request['root_required'] = [rare]
        item = claim(rpc, consumer, request)
        return None, request, item

    for root, request, item in in_parallel(run, jobs, clients=16):
        assert item['status'] == 200, item
        if root is not None:
            continue
        group = request['groups'][0]
        assert cloud.admits(item['root_uuid'], group,
                            request.get('root_required', ())), (request,
                                                                item)
    assert one(rpc.get_usages(provider_uuids=[cloud.roots[10]]))[
        'usages'] == {name: 0}


def test_a_zone_of_many_roots_is_read_whole_when_its_sample_is_full(rpc):
    """A spread claim into a zone of more roots than it samples first
    (``windows.SAMPLED_ROOTS``) weighs a sample of them; with one root of
    the zone left with room, most samples miss it, and the claim still
    finds it: it reads the whole zone before it says nothing fits. The
    roots outside the zone keep their room and are never taken."""
    from allocworker.scheduling import windows
    name = slot_class(rpc)
    zone = str(uuid.uuid4())
    count = 3 * windows.SAMPLED_ROOTS
    inside = []
    for _ in range(count):
        root, generation = provider(rpc, {name: {'total': 1}})
        _decorate(root, generation, (), [zone])
        inside.append(root)
    outside = [provider(rpc, {name: {'total': 4}})[0] for _ in range(4)]
    left = set(random.sample(inside, 3))
    answer = rpc.allocate(items=[
        alloc_item(str(uuid.uuid4()), {root: {name: 1}})
        for root in inside if root not in left])
    assert {i['status'] for i in answer['items']} == {200}, answer
    request = {'groups': [{'resources': {name: 1}, 'member_of': [zone]}]}
    landed = set()
    for _ in range(len(left)):
        item = claim(rpc, str(uuid.uuid4()), request, strategy='spread')
        assert item['status'] == 200, item
        landed.add(item['root_uuid'])
    assert landed == left
    item = claim(rpc, str(uuid.uuid4()), request, strategy='spread')
    assert item['code'] == 'capacity.exceeded', item
    for root in outside:
        assert one(rpc.get_usages(provider_uuids=[root]))['usages'] == {
            name: 0}
