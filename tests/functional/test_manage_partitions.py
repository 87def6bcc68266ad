"""What operators see of partitions, on every backend: allocworker-manage
listings and usage narrowed to one partition with a partition column,
the audit of consumers and trees split across partitions (rows written
behind the service layer's back, as a worker of the previous release
could), and the books as gauges per partition."""

import collections
import json
import uuid

import pytest
import sqlalchemy as sa

from allocworker.allocations import writes as allocations
from allocworker.db.ledger import gauges as db_gauges
from allocworker.db import schema
from allocworker.providers import resource_classes
from allocworker.providers import rules as providers
from tests.functional import services


def run(scratch, *args, check=True):
    return services.manage('%s/sync.conf' % scratch, *args, check=check)


def as_json(scratch, *args):
    return json.loads(run(scratch, *(args + ('--format', 'json'))).stdout)


def _partition(prefix='site'):
    return '%s-%s' % (prefix, uuid.uuid4().hex[:10])


def _provider(partition=None, parent=None, inventories=None):
    """A provider made through the service layer (an unbound operator);
    its uuid."""
    made = str(uuid.uuid4())
    item, = providers.create_provider(None, made, 'rp-' + made, parent,
                                      partition)
    assert item['status'] == 200, item
    if inventories:
        item, = providers.set_inventories(None, made, item['generation'],
                                          inventories)
        assert item['status'] == 200, item
    return made


def _allocate(consumer, allocations_):
    item, = allocations.allocate(None, [{
        'consumer_uuid': consumer, 'consumer_generation': None,
        'project_id': 'p', 'user_id': 'u', 'allocations': allocations_}])
    assert item['status'] == 200, item
    return item


@pytest.fixture(scope='module')
def sites(service_layer):
    """Two partitions, a host in each (the first with a child), and a
    consumer on each host."""
    east, west = _partition('east'), _partition('west')
    hosts = {east: _provider(east, inventories={'VCPU': {'total': 8}}),
             west: _provider(west, inventories={'VCPU': {'total': 4}})}
    child = _provider(parent=hosts[east],
                      inventories={'DISK_GB': {'total': 100}})
    for partition, used in ((east, 3), (west, 1)):
        _allocate(CONSUMERS[partition], {hosts[partition]: {'VCPU': used}})
    return east, west, hosts, child


# The consumer ``sites`` places in each partition.
CONSUMERS = collections.defaultdict(lambda: str(uuid.uuid4()))


def test_provider_list_narrows_to_a_partition(sites, scratch):
    east, west, hosts, child = sites
    listed = as_json(scratch, 'provider', 'list', '--partition', east)
    assert sorted(p['uuid'] for p in listed) == sorted([hosts[east], child])
    assert {p['partition'] for p in listed} == {east}
    everyone = {p['uuid'] for p in as_json(scratch, 'provider', 'list')}
    assert {hosts[east], hosts[west], child} <= everyone
    rows = services.table(run(scratch, 'provider', 'list', '--partition',
                              west).stdout)
    assert rows[0][-1] == 'partition'
    assert [row[-1] for row in rows[1:]] == [west]
    assert run(scratch, 'provider', 'list', '--partition',
               _partition()).stdout == '(none)\n'


def test_usage_shows_and_narrows_to_a_partition(sites, scratch):
    east, west, hosts, child = sites
    rows = as_json(scratch, 'usage', '--partition', east)
    shown = sorted((r['provider_uuid'], r['resource_class'], r['used'],
                    r['partition']) for r in rows)
    assert shown == sorted([(hosts[east], 'VCPU', 3, east),
                            (child, 'DISK_GB', 0, east)])
    table = services.table(run(scratch, 'usage', hosts[west]).stdout)
    assert table[0][:3] == ['provider', 'partition', 'resource_class']
    assert [row[1:4] for row in table[1:]] == [[west, 'VCPU', '1']]
    # Every partition without --partition.
    every = {r['provider_uuid']: r['partition']
             for r in as_json(scratch, 'usage')}
    assert every[hosts[east]] == east and every[hosts[west]] == west


def test_topology_show_lists_the_partitions(sites, scratch):
    east, west, hosts, child = sites
    rows = services.table(run(scratch, 'topology', 'show',
                              'partition').stdout)
    assert rows[0] == ['level', 'label', 'aggregates', 'roots']
    # Roots only: the child of the east host is not counted.
    assert ['partition', east, '-', '1'] in rows
    assert ['partition', west, '-', '1'] in rows
    shown, = as_json(scratch, 'topology', 'show', 'partition')
    assert (shown['domains'], shown['generation']) == ({}, None)
    result = run(scratch, 'topology', 'delete', 'partition', check=False)
    assert result.returncode == 1 and 'reserved' in result.stderr


def test_a_group_at_partition_scope(sites, scratch):
    east, west, hosts, child = sites
    group = str(uuid.uuid4())
    run(scratch, 'group', 'create', '--uuid', group, '--name', 'sites',
        '--rule', 'policy=anti-affinity,scope=partition')
    run(scratch, 'group', 'add', group, CONSUMERS[east], CONSUMERS[west])
    printed = run(scratch, 'group', 'show', group).stdout
    assert {row[0]: row[1] for row in services.table(printed)
            if row[0] in (east, west)} == {east: '1', west: '1'}
    assert 'rule 0: anti-affinity at partition: satisfied yes' in printed
    run(scratch, 'group', 'delete', group)


def test_a_malformed_partition_is_refused_in_one_line(database, scratch):
    for command in (('provider', 'list'), ('usage',)):
        result = run(scratch, *(command + ('--partition', 'Not A Name')),
                     check=False)
        assert result.returncode == 1, result.stdout
        assert result.stderr.startswith('error: invalid_request'), \
            result.stderr
        assert '--partition' in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_the_books_are_gauged_per_partition(sites, database):
    east, west, hosts, child = sites
    summed = {(b.partition, b.resource_class): b
              for b in db_gauges.books(database, per_provider=False)}
    assert (summed[(east, 'VCPU')].capacity,
            summed[(east, 'VCPU')].used) == (8, 3)
    assert summed[(east, 'DISK_GB')].capacity == 100
    assert (summed[(west, 'VCPU')].capacity,
            summed[(west, 'VCPU')].used) == (4, 1)
    per_provider = {b.provider_uuid: b.partition
                    for b in db_gauges.books(database, per_provider=True)}
    assert per_provider[child] == east


def _set_partition(database, provider, partition):
    engine = sa.create_engine(database)
    try:
        with engine.begin() as conn:
            # Core quotes ``partition``, a reserved word on MySQL.
            conn.execute(sa.update(schema.providers)
                         .where(schema.providers.c.uuid == provider)
                         .values(partition=partition))
    finally:
        engine.dispose()


def _breaches(scratch):
    result = run(scratch, 'audit', '--format', 'json', check=False)
    report = json.loads(result.stdout)
    assert result.returncode == (0 if report['clean'] else 1)
    return {b['invariant']: b['rows'] for b in report['breaches']}


def test_audit_reports_trees_and_consumers_across_partitions(
        service_layer, database, scratch):
    east, west = _partition('east'), _partition('west')
    host = _provider(east, inventories={'VCPU': {'total': 8}})
    item, = resource_classes.create_resource_class(None,
                                                   'CUSTOM_GPU_AUDIT')
    assert item['status'] == 200, item
    gpu = _provider(parent=host,
                    inventories={'CUSTOM_GPU_AUDIT': {'total': 2}})
    pool = _provider('shared', inventories={'DISK_GB': {'total': 100}})
    split, beside = str(uuid.uuid4()), str(uuid.uuid4())
    _allocate(split, {host: {'VCPU': 1}, gpu: {'CUSTOM_GPU_AUDIT': 1}})
    # On a shared pool beside its host: one partition, shared aside.
    _allocate(beside, {host: {'VCPU': 1}, pool: {'DISK_GB': 10}})
    assert _breaches(scratch) == {}
    # A worker of the release before partitions made the child in
    # ``default`` under a parent of another partition.
    _set_partition(database, gpu, west)
    try:
        found = _breaches(scratch)
        assert found == {
            'consumer with allocations in two partitions (shared aside)':
                [{'consumer_uuid': split, 'partitions': sorted(
                    [east, west])}],
            'provider in another partition than its root': [{
                'root_uuid': host, 'root_partition': east,
                'provider_uuid': gpu, 'partition': west}]}
        printed = run(scratch, 'audit', check=False)
        assert printed.returncode == 1
        assert 'BREACH: provider in another partition than its root (1)' \
            in printed.stdout
    finally:
        _set_partition(database, gpu, east)
    assert _breaches(scratch) == {}
