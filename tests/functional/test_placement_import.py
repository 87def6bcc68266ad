"""Moving a cloud from a real Placement 16.0.0 (PyPI) to allocworker, as
an operator would: ``allocworker-manage placement import``, ``compare``
against allocworker-api, writes through the shim with generations read
from Placement before the import, ``--catch-up`` after Placement writes,
and bad input refused with one line and nothing written. On MariaDB and
PostgreSQL, each Placement on the same backend as its target."""

import json
import os
import uuid

import pytest
import sqlalchemy as sa

from tests.functional import placement_cloud
from tests.functional import services

BACKENDS = ('postgresql', 'mysql')


@pytest.fixture(scope='module')
def placement(backend, scratch):
    with placement_cloud.placement(backend, scratch) as (url, api):
        cloud = placement_cloud.fill(api)
        # What Nova's and Neutron's caches hold at the cutover.
        seen = {'host1': api.generation(cloud['host1']),
                'migration': api.consumer(cloud['migration'])}
        yield url, api, cloud, seen


@pytest.fixture(scope='module')
def config(database, scratch):
    return services.write_config(os.path.join(scratch, 'aw.conf'), database,
                                 'unused')


def _import(config, url, *extra, check=True):
    return services.manage(config, 'placement', 'import',
                           '--from-connection', url, *extra, check=check)


def _held(database):
    engine = sa.create_engine(database, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        found = [conn.execute(sa.text('SELECT COUNT(*) FROM %s' % t))
                 .scalar() for t in ('providers', 'consumers', 'allocations')]
    engine.dispose()
    return found


def _one_line_refusal(result, words):
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('error: '), result.stderr
    assert words in lines[0], lines[0]


def test_bad_sources_write_nothing(placement, config, database, backend,
                                   scratch):
    port = services.free_port()
    server = services.SERVER_URLS[backend]
    _one_line_refusal(_import(config, '%s:%d/nowhere' % (
        server.rsplit(':', 1)[0], port), check=False),
        'cannot read the Placement database')
    with services.fresh_database(backend, scratch) as other:
        engine = sa.create_engine(other, poolclass=sa.pool.NullPool)
        with engine.begin() as conn:
            conn.exec_driver_sql('CREATE TABLE alembic_version '
                                 '(version_num VARCHAR(32) NOT NULL)')
        _one_line_refusal(_import(config, other, check=False),
                          'no alembic_version table')
        with engine.begin() as conn:
            conn.exec_driver_sql("INSERT INTO alembic_version "
                                 "VALUES ('422ece571366')")
        engine.dispose()
        _one_line_refusal(_import(config, other, check=False),
                          'schema revision 422ece571366')
    assert _held(database) == [0, 0, 0]


def test_dry_run_reports_and_writes_nothing(placement, config, database):
    url, _api, cloud, _seen = placement
    result = _import(config, url, '--dry-run', '--format', 'json')
    summary = json.loads(result.stdout)
    assert summary['dry_run'] and summary['counts']['providers'] == 8
    assert _held(database) == [0, 0, 0]


def test_import_keeps_the_books(placement, config, database):
    url, api, cloud, _seen = placement
    summary = json.loads(_import(config, url, '--format', 'json').stdout)
    counts = summary['counts']
    assert (counts['providers'], counts['consumers'],
            counts['allocations']) == (8, 5, 8)
    assert (summary['audit']['clean'], summary['audit']['breaches']) == (
        True, [])
    # The host that lost memory is carried over as it is, and listed.
    over = [i for i in summary['issues'] if i['uuid'] == cloud['host2']]
    assert len(over) == 1 and 'MEMORY_MB: 3512 used' in over[0]['detail']
    services.manage(config, 'audit')
    # A second first pass is refused and changes nothing.
    before = _held(database)
    _one_line_refusal(_import(config, url, check=False),
                      'the target already holds 8 providers and 5 consumers')
    assert _held(database) == before
    # Told to, it replaces them.
    again = json.loads(_import(config, url, '--force', '--format',
                               'json').stdout)
    # (The custom class and trait stay in the catalogue: none is new.)
    for name in ('resource_classes', 'traits'):
        assert again['counts'].pop(name) == 0
        counts.pop(name)
    assert again['counts'] == counts and again['audit']['clean']
    assert _held(database) == before


def _compare(config, *args):
    return services.manage(config, 'placement', 'compare', '--format',
                           'json', *args, check=False)


def test_compare_finds_nothing(placement, config, database, scratch):
    _url, api, _cloud, _seen = placement
    server, port = services.start_api(database, scratch)
    try:
        result = _compare(config, '--endpoint', api.base,
                          '--other-endpoint', 'http://127.0.0.1:%d' % port)
        assert result.returncode == 0, result.stdout + result.stderr
        assert json.loads(result.stdout) == {'differences': [],
                                             'equal': True}
    finally:
        server.kill()
        server.wait()
    result = _compare(config, '--endpoint', api.base)
    assert result.returncode == 0, result.stdout + result.stderr


def test_catch_up_brings_placement_writes(placement, config, database):
    url, api, cloud, _seen = placement
    new_host = api.provider('host3', {'VCPU': {'total': 16}},
                            aggregates=[cloud['aggregate']])
    newcomer = str(uuid.uuid4())
    api.allocate(newcomer, {new_host: {'VCPU': 3}}, project='p4')
    api.allocate(cloud['moved'], {new_host: {'VCPU': 1}}, project='p2')
    api.call('DELETE', '/allocations/%s' % cloud['untyped'])
    api.call('DELETE', '/resource_providers/%s' % cloud['empty'])
    api.call('PUT', '/resource_providers/%s/traits' % cloud['shared'], {
        'resource_provider_generation': api.generation(cloud['shared']),
        'traits': ['MISC_SHARES_VIA_AGGREGATE', 'CUSTOM_FAST']})
    api.call('PUT', '/resource_providers/%s/aggregates' % cloud['host2'],
             [], version='1.1')  # no generation change before 1.19
    summary = json.loads(_import(config, url, '--catch-up',
                                 '--overlap-seconds', '0',
                                 '--format', 'json').stdout)
    counts = summary['counts']
    # Only what changed: the newcomer and the moved consumer, not the
    # three consumers Placement left alone.
    assert (counts['consumers'], counts['consumers_removed'],
            counts['consumers_unchanged']) == (2, 1, 0), summary
    # host3 is new and the shared provider's traits moved its generation
    # (Placement moves a provider's generation when allocations are made
    # on it, not when they leave); the provider without inventory is gone.
    assert (counts['providers'], counts['providers_removed']) == (2, 1)
    assert summary['audit']['clean']
    result = _compare(config, '--endpoint', api.base)
    assert result.returncode == 0, result.stdout + result.stderr


def test_shim_writes_with_generations_read_before(placement, config,
                                                  database, scratch):
    _url, api, cloud, seen = placement
    server, port = services.start_api(database, scratch, name='api-writes')
    shim = placement_cloud.Api('http://127.0.0.1:%d' % port)
    try:
        host1 = cloud['host1']
        shim.call('PUT', '/resource_providers/%s/traits' % host1, {
            'resource_provider_generation': seen['host1'],
            'traits': ['HW_CPU_X86_AVX2']})
        migration = seen['migration']
        shim.call('PUT', '/allocations/%s' % cloud['migration'], {
            'allocations': {cloud['host2-numa1']: {'resources': {
                'PCPU': 1}}},
            'project_id': migration['project_id'],
            'user_id': migration['user_id'],
            'consumer_generation': migration['consumer_generation'],
            'consumer_type': 'MIGRATION'}, version='1.38')
        # A generation Placement never gave is still refused.
        shim.call('PUT', '/resource_providers/%s/traits' % host1, {
            'resource_provider_generation': seen['host1'],
            'traits': []}, expect=(409,))
    finally:
        server.kill()
        server.wait()
    # Now the two differ, and compare says where.
    result = _compare(config, '--endpoint', api.base)
    assert result.returncode == 1
    where = {d['where'] for d in json.loads(result.stdout)['differences']}
    assert {cloud['host1'], cloud['migration']} <= where
