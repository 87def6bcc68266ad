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


def test_audit_is_clean_then_reports_a_breach(database, scratch):
    import sqlalchemy as sa
    clean = run(scratch, 'audit')
    assert clean.returncode == 0 and 'clean' in clean.stdout
    host = str(uuid.uuid4())
    run(scratch, 'provider', 'create', '--uuid', host, '--name', 'h-' + host)
    # Break the books behind the service layer's back: a consumer row
    # without allocations, which no allocate call can leave.
    engine = sa.create_engine(database)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO consumers (uuid, project_id, user_id, "
            "consumer_type, generation, created_at) VALUES "
            "('%s', 'p', 'u', 'INSTANCE', 1, '2026-01-01 00:00:00')"
            % host)
    try:
        broken = run(scratch, 'audit', '--format', 'json', check=False)
        assert broken.returncode == 1
        report = json.loads(broken.stdout)
        assert report['clean'] is False
        # (The project's consumer counter, kept by the writes, does not
        # count the row either.)
        assert [b['invariant'] for b in report['breaches']] == [
            'project usage counter differs from the allocations',
            'consumer without allocations']
        assert report['breaches'][1]['rows'][0]['consumer_uuid'] == host
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql("DELETE FROM consumers WHERE uuid = '%s'"
                                 % host)
        engine.dispose()
    assert run(scratch, 'audit').returncode == 0
