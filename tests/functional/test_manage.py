"""allocworker-manage as an operator runs it, on every backend."""

import json
import uuid

from tests.functional import services


def run(scratch, *args, check=True):
    return services.manage('%s/sync.conf' % scratch, *args, check=check)


def as_json(scratch, *args):
    return json.loads(run(scratch, *(args + ('--format', 'json'))).stdout)


def test_operator_walkthrough(database, scratch):
    host, child = str(uuid.uuid4()), str(uuid.uuid4())
    run(scratch, 'provider', 'create', '--uuid', host, '--name',
        'host-' + host)
    run(scratch, 'provider', 'create', '--uuid', child, '--name',
        'gpu-' + child, '--parent', host)
    run(scratch, 'resource-class', 'create', 'CUSTOM_GOLD')
    run(scratch, 'inventory', 'set', host, 'VCPU', '--total', '16',
        '--allocation-ratio', '4')
    run(scratch, 'inventory', 'set', host, 'MEMORY_MB', '--total', '4096',
        '--reserved', '512')
    run(scratch, 'inventory', 'set', child, 'CUSTOM_GOLD', '--total', '2')

    shown = as_json(scratch, 'provider', 'show', host)
    assert shown['inventories']['VCPU']['allocation_ratio'] == 4.0
    assert set(shown['inventories']) == {'VCPU', 'MEMORY_MB'}
    listed = {p['uuid']: p for p in as_json(scratch, 'provider', 'list')}
    assert listed[child]['root_uuid'] == host

    usage = {(r['provider_uuid'], r['resource_class']): r
             for r in as_json(scratch, 'usage')}
    assert usage[(host, 'VCPU')]['capacity'] == 64
    assert usage[(host, 'MEMORY_MB')]['capacity'] == 3584
    assert usage[(child, 'CUSTOM_GOLD')]['used'] == 0
    table = run(scratch, 'usage', host).stdout
    assert 'VCPU' in table and '[....................]' in table

    run(scratch, 'inventory', 'delete', host, 'MEMORY_MB')
    left = as_json(scratch, 'inventory', 'show', host)
    assert [row['resource_class'] for row in left] == ['VCPU']
    refused = run(scratch, 'provider', 'delete', host, check=False)
    assert refused.returncode == 1
    assert 'provider.in_use' in refused.stderr
    run(scratch, 'provider', 'delete', child)
    run(scratch, 'provider', 'delete', host)


def test_errors_are_one_line_and_exit_non_zero(database, scratch):
    missing = str(uuid.uuid4())
    for args in (['provider', 'show', missing],
                 ['provider', 'delete', 'not-a-uuid'],
                 ['inventory', 'set', missing, 'VCPU', '--total', '1'],
                 ['resource-class', 'create', 'lowercase']):
        result = run(scratch, *args, check=False)
        assert result.returncode != 0, args
        assert result.stderr.startswith('error: '), result.stderr
        assert 'Traceback' not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_group_commands(database, scratch):
    group = str(uuid.uuid4())
    member, other = str(uuid.uuid4()), str(uuid.uuid4())
    run(scratch, 'group', 'create', '--uuid', group, '--name', 'db-cluster',
        '--policy', 'anti-affinity', '--max-per-root', '1')
    run(scratch, 'group', 'add', group, member, other)
    shown = as_json(scratch, 'group', 'show', group)
    assert shown['members'] == sorted([member, other])
    assert shown['policy'] == 'anti-affinity' and shown['roots'] == {}
    assert 'member' in run(scratch, 'group', 'show', group).stdout
    run(scratch, 'group', 'remove', group, other)
    listed = {g['uuid']: g for g in as_json(scratch, 'group', 'list')}
    assert listed[group]['members'] == [member]
    run(scratch, 'group', 'delete', group)
    missing = run(scratch, 'group', 'show', group, check=False)
    assert missing.returncode == 1 and 'group.not_found' in missing.stderr
