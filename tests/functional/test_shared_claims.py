"""Concurrent ``claim`` calls sharing transactions over the real RabbitMQ
with several worker processes: in a storm of claim calls where some are
refused (nothing fits, a stale generation, policy, an unknown group),
every call gets exactly the answer it would get alone, under its own
request id, each refusal named by its index in its own call, nothing
refused is written, and the books audit clean."""

from concurrent import futures
import threading
import uuid

from tests.functional import services
from tests.functional.helpers import one, provider, usage

WORKER_CONFIG = """
[database]
max_overflow = 10
"""

ADMIN = ['admin']
MEMBER = ['member']
HOSTS = 12
PER_HOST = 8


def caller(roles, project):
    return {'request_id': 'req-%s' % uuid.uuid4(), 'roles': roles,
            'project_id': project, 'user_id': 'u-' + project}


def _claim(consumer, request, project='p-storm', **extra):
    item = {'consumer_uuid': consumer, 'consumer_generation': None,
            'project_id': project, 'user_id': 'u-' + project,
            'request': request}
    item.update(extra)
    return item


def _storm(rpc, calls):
    """Run (context, items) claim calls at once; [answer]."""
    start = threading.Barrier(len(calls))

    def run(call):
        context, items = call
        start.wait()
        return rpc.call('claim', context=context, items=items,
                        rpc_timeout=120)

    with futures.ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def test_a_storm_of_claim_calls_answers_each_as_if_alone(rpc, scratch):
    name = 'CUSTOM_SHARED_%s' % uuid.uuid4().hex[:12].upper()
    assert one(rpc.create_resource_class(name=name))['status'] == 200
    roots = [provider(rpc, {name: {'total': PER_HOST}})[0]
             for _ in range(HOSTS)]
    fits = {'groups': [{'resources': {name: 1}}]}
    too_big = {'groups': [{'resources': {name: PER_HOST + 1}}]}
    existing = one(rpc.claim(items=[_claim(str(uuid.uuid4()), fits)]))
    foreign = one(rpc.claim(items=[_claim(str(uuid.uuid4()), fits,
                                          project='p-other')]))
    kept_root = roots[0]
    expected = []  # (context, items, [(status, code)])
    for n in range(8):
        expected.append((caller(ADMIN, 'p-ops'),
                         [_claim(str(uuid.uuid4()), fits)], [(200, None)]))
        expected.append((caller(MEMBER, 'p-storm'),
                         [_claim(str(uuid.uuid4()), fits)], [(200, None)]))
    for n in range(3):
        expected.append((caller(ADMIN, 'p-ops'),
                         [_claim(str(uuid.uuid4()), too_big)],
                         [(409, 'capacity.exceeded')]))
        expected.append((caller(ADMIN, 'p-ops'), [_claim(
            existing['consumer_uuid'], fits,
            consumer_generation=existing['consumer_generation'] + 50)],
            [(409, 'consumer.generation_conflict')]))
        # Taking over another project's consumer: denied inside the
        # transaction, even one shared with admins who may.
        expected.append((caller(MEMBER, 'p-storm'), [_claim(
            foreign['consumer_uuid'], fits,
            consumer_generation=foreign['consumer_generation'])],
            [(403, 'forbidden')]))
        # A new consumer of another project: denied before any.
        expected.append((caller(MEMBER, 'p-storm'),
                         [_claim(str(uuid.uuid4()), fits,
                                 project='p-other')],
                         [(403, 'forbidden')]))
        expected.append((caller(ADMIN, 'p-ops'), [_claim(
            str(uuid.uuid4()), fits, group_uuid=str(uuid.uuid4()))],
            [(400, 'group.not_found')]))
        expected.append((caller(ADMIN, 'p-ops'), [_claim(
            str(uuid.uuid4()), fits, exclude_roots=roots[1:])],
            [(200, None)]))
        # Several items keep their order and their own fates.
        expected.append((caller(ADMIN, 'p-ops'), [
            _claim(str(uuid.uuid4()), fits),
            _claim(str(uuid.uuid4()), too_big),
            _claim(str(uuid.uuid4()), fits)],
            [(200, None), (409, 'capacity.exceeded'), (200, None)]))
    answers = _storm(rpc, [(c, items) for c, items, _ in expected])
    placed = []
    for (context, items, wanted), answer in zip(expected, answers):
        assert answer['request_id'] == context['request_id'], answer
        got = [(i['status'], i.get('code')) for i in answer['items']]
        assert got == wanted, answer
        for position, (item, result) in enumerate(zip(items,
                                                      answer['items'])):
            assert result['consumer_uuid'] == item['consumer_uuid']
            if result['status'] == 200:
                placed.append(result)
                if 'exclude_roots' in item:
                    assert result['root_uuid'] == kept_root
            elif result['status'] == 409:
                # Named by its index in its own call.
                assert result['detail'].startswith(
                    'items[%d]' % position), result
    # Every placement is held as answered, and nothing refused was
    # written: the hosts hold exactly the claims placed, with the two
    # made before the storm.
    for result in placed:
        item = one(rpc.get_allocations(consumer_uuids=[
            result['consumer_uuid']]))
        assert item['consumer_generation'] == result['consumer_generation']
        assert {p: a['resources'] for p, a in item['allocations'].items()
                } == result['allocations']
    assert sum(usage(rpc, root).get(name, 0) for root in roots) == \
        len(placed) + 2
    held = one(rpc.get_allocations(consumer_uuids=[
        foreign['consumer_uuid']]))
    assert held['project_id'] == 'p-other'
    assert held['consumer_generation'] == foreign['consumer_generation']
    audit = services.manage('%s/worker.conf' % scratch, 'audit',
                            check=False)
    assert audit.returncode == 0, audit.stdout + audit.stderr


def _hosts_and_a_group(rpc, tag, hosts):
    """A new resource class, ``hosts`` roots with two slots of it each,
    and an anti-affinity group of at most one member per root: (class
    name, root uuids, group uuid)."""
    name = 'CUSTOM_%s_%s' % (tag, uuid.uuid4().hex[:12].upper())
    assert one(rpc.create_resource_class(name=name))['status'] == 200
    roots = [provider(rpc, {name: {'total': 2}})[0] for _ in range(hosts)]
    group = str(uuid.uuid4())
    assert one(rpc.create_group(uuid=group, name='g-' + group,
                                policy='anti-affinity', max_per_root=1)
               )['status'] == 200
    return name, roots, group


def test_members_added_before_their_claims_keep_their_policy(rpc):
    """Consumers added to an anti-affinity group before they exist,
    then claimed at once without naming the group: the claims that share
    a transaction judge each other's placements, so each lands on a root
    of its own, and one member more finds none."""
    name, roots, group = _hosts_and_a_group(rpc, 'MEMBERS', 12)
    members = [str(uuid.uuid4()) for _ in range(13)]
    added = rpc.add_members(group_uuid=group, consumer_uuids=members)
    assert [i['status'] for i in added['items']] == [200] * 13, added
    fits = {'groups': [{'resources': {name: 1}}]}
    answers = _storm(rpc, [(caller(ADMIN, 'p-ops'), [_claim(m, fits)])
                           for m in members[:12]])
    placed = [a['items'][0] for a in answers]
    assert [p['status'] for p in placed] == [200] * 12, placed
    assert sorted(p['root_uuid'] for p in placed) == sorted(roots)
    late = one(rpc.claim(items=[_claim(members[12], fits)]))
    assert (late['status'], late['code']) == (409, 'group.policy_violation')


def test_claims_held_back_fill_hosts_exactly_and_are_written_whole(
        rpc, scratch):
    """Claims for new consumers in one transaction are written together
    at its end (``allocations/staging.py``); each later claim still sees
    the earlier ones' usage, and a claim that joins a group is placed
    after them: six claims, one of them joining a group, fill three
    hosts of two slots exactly, two on each, every one held as answered;
    a seventh finds nothing."""
    name, roots, group = _hosts_and_a_group(rpc, 'HELD', 3)
    fits = {'groups': [{'resources': {name: 1}}]}
    items = [_claim(str(uuid.uuid4()), fits) for _ in range(2)]
    items.append(_claim(str(uuid.uuid4()), fits, group_uuid=group))
    items.extend(_claim(str(uuid.uuid4()), fits) for _ in range(3))
    answer = rpc.claim(items=items, atomic=True)
    assert [i['status'] for i in answer['items']] == [200] * 6, answer
    landed = sorted(i['root_uuid'] for i in answer['items'])
    assert landed == sorted(roots * 2), answer
    for result in answer['items']:
        held = one(rpc.get_allocations(consumer_uuids=[
            result['consumer_uuid']]))
        assert held['consumer_generation'] == \
            result['consumer_generation'] >= 1
        assert {p: a['resources'] for p, a in held['allocations'].items()
                } == result['allocations']
    assert [usage(rpc, root).get(name) for root in roots] == [2, 2, 2]
    late = one(rpc.claim(items=[_claim(str(uuid.uuid4()), fits)]))
    assert (late['status'], late['code']) == (409, 'capacity.exceeded')
    audit = services.manage('%s/worker.conf' % scratch, 'audit',
                            check=False)
    assert audit.returncode == 0, audit.stdout + audit.stderr
