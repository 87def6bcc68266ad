"""Project limits from a real Keystone (tools/keystone.sh), enforced by
worker processes over RPC: the boot storm of one project on every
backend. test_limits_keystone_life.py has the rest (limits changing,
Keystone stopping and starting)."""

import os
import time
import uuid

import pytest

from tests.functional import services
from tests.functional.helpers import (alloc_item, assert_fault, in_parallel,
                                      one, provider)


def boot(rpc, project, host, vcpu=1):
    return one(rpc.allocate(items=[alloc_item(
        str(uuid.uuid4()), {host: {'VCPU': vcpu}}, project=project)]))


def limit_in_force(rpc, project, resource, value, timeout=30):
    """Wait until every worker process judges ``project`` by ``value``:
    one shows it, and each reads Keystone again within [quota]
    refresh_seconds (2 in these tests) of the limit being set. Booting
    at once raced the first refresh on a quiet machine (all 64 passed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(i['resource'] == resource and i['limit'] == value
               for i in rpc.get_limits(project_id=project)['items']):
            time.sleep(2.5)
            return
        time.sleep(0.2)
    raise AssertionError('no worker read the limit of %s in %d s'
                         % (project, timeout))


def test_64_concurrent_boots_against_a_limit_of_10_give_exactly_10(
        limited_rpc, keystone):
    rpc = limited_rpc
    project = keystone.project('storm-%s' % uuid.uuid4().hex[:8])
    keystone.project_limit(project, 'servers', 10)
    other = keystone.project('calm-%s' % uuid.uuid4().hex[:8])
    host, _gen = provider(rpc, {'VCPU': {'total': 1000}})
    limit_in_force(rpc, project, 'servers', 10)
    results = in_parallel(lambda n: boot(rpc, project, host), range(64),
                          clients=64)
    statuses = sorted(r['status'] for r in results)
    assert statuses == [200] * 10 + [403] * 54, [
        r for r in results if r['status'] not in (200, 403)]
    refused = [r for r in results if r['status'] == 403]
    assert_fault(refused[0], 403, 'quota.exceeded')
    assert 'servers' in refused[0]['detail']
    limits = {i['resource']: i for i in
              rpc.get_limits(project_id=project)['items']}
    assert (limits['servers']['usage'], limits['servers']['remaining']) == \
        (10, 0)
    assert limits['class:VCPU']['usage'] == 10
    # Other projects are not held back by the full one.
    assert boot(rpc, other, host)['status'] == 200


def test_manage_quota_show_prints_a_bar_per_resource(
        limited_rpc, keystone, backend, scratch):
    if backend != 'sqlite':
        pytest.skip('the command reads as on any backend; once is enough')
    rpc = limited_rpc
    project = keystone.project('show-%s' % uuid.uuid4().hex[:8])
    keystone.project_limit(project, 'servers', 4)
    host, _gen = provider(rpc, {'VCPU': {'total': 1000}})
    assert boot(rpc, project, host, vcpu=3)['status'] == 200
    assert boot(rpc, project, host, vcpu=3)['status'] == 200
    shown = services.manage(os.path.join(scratch, 'worker.conf'), 'quota',
                            'show', '--project', project).stdout
    rows = {row[0]: row for row in services.table(shown)[1:]}
    assert rows['servers'][1:5] == ['4', '2', '2', '[##########..........]']
    assert rows['class:VCPU'][1:4] == ['1000', '6', '994']
    denied = services.manage(os.path.join(scratch, 'worker.conf'), 'quota',
                             'show', check=False)
    assert denied.returncode == 2


def test_claims_of_several_items_and_allocates_race_within_the_limit(
        limited_rpc, keystone):
    """Claims of two new instances and allocates of one, of one project,
    at once on two hosts: the project's locks come after the providers',
    and a claim's second item is tried holding the first's project lock,
    so a claim and an allocate may meet in a deadlock, which the
    database breaks and the write retries. Whatever happens, exactly the
    limit's servers are placed, every refusal is the limit's, and the
    counters say so."""
    rpc = limited_rpc
    project = keystone.project('race-%s' % uuid.uuid4().hex[:8])
    keystone.project_limit(project, 'servers', 12)
    hosts = [provider(rpc, {'VCPU': {'total': 1000}})[0] for _ in range(2)]
    limit_in_force(rpc, project, 'servers', 12)

    def claim(n):
        return rpc.claim(items=[{
            'consumer_uuid': str(uuid.uuid4()), 'consumer_generation': None,
            'project_id': project, 'user_id': 'u', 'request': {'groups': [{
                'resources': {'VCPU': 1}, 'in_tree': hosts[(n + k) % 2]}]}}
            for k in range(2)])['items']

    def job(n):
        return claim(n) if n % 2 else [boot(rpc, project, hosts[n % 2])]

    answers = [item for items in in_parallel(job, range(32), clients=32)
               for item in items]
    statuses = sorted(item['status'] for item in answers)
    assert statuses == [200] * 12 + [403] * (len(answers) - 12), [
        item for item in answers if item['status'] not in (200, 403)]
    for refused in (item for item in answers if item['status'] == 403):
        assert_fault(refused, 403, 'quota.exceeded')
    limits = {i['resource']: i for i in
              rpc.get_limits(project_id=project)['items']}
    assert limits['servers']['usage'] == 12
    assert limits['class:VCPU']['usage'] == 12
