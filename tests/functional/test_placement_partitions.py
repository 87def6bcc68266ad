"""Merging Placements (design §3 "Partitions"): two real Placement
16.0.0 deployments (PyPI, each on its own PostgreSQL database, filled
over its own HTTP API, both with a ``compute-01``...) imported into
partitions ``site-a`` and ``site-b`` of one allocworker with
``allocworker-manage placement import --partition``; ``compare
--partition`` clean for each, and clean through the shim for each
site's service user (a real Keystone, bound to the site's partition,
no ``--partition``); the providers' partitions over RPC; a
second first pass into a partition refused, ``--force`` and
``--catch-up`` confined to their partition; uuids that another
partition holds refused before anything is written.

The cheap cases (a bad name, a consumer uuid held by another
partition on a first pass, ``--force`` and catch-up beside another
partition) also run on SQLite and MariaDB, from Placement databases
made by ``placement-manage db sync`` and filled with SQL (as
``test_placement_import_tmp`` does)."""

import json
import os
import subprocess
import time
import uuid

import pytest
import sqlalchemy as sa

from benchmarks import placement_import as bench
from tests.functional import placement_cloud
from tests.functional import services
from tests.functional.helpers import one
from tests.functional.test_placement_import import _held

BACKENDS = ('postgresql',)
HOSTS = 12
CONSUMERS = 30


@pytest.fixture(scope='module')
def worker_count():
    return 1


def _fill(api, site):
    """A site of HOSTS hosts (named alike on every site), each with a
    NUMA child, a sharing disk provider, and CONSUMERS consumers over
    the site's own project and one that both sites share; (hosts' and
    children's uuids, the consumers' uuids)."""
    api.call('PUT', '/resource_classes/CUSTOM_GPU', version='1.7')
    api.call('PUT', '/traits/CUSTOM_FAST')
    aggregate = str(uuid.uuid4())
    disk = api.provider('shared-disk', {'DISK_GB': {'total': 10000}},
                        traits=['MISC_SHARES_VIA_AGGREGATE'],
                        aggregates=[aggregate])
    hosts = []
    for n in range(1, HOSTS + 1):
        host = api.provider('compute-%02d' % n, {
            'MEMORY_MB': {'total': 16384}, 'CUSTOM_GPU': {'total': 2}},
            traits=['CUSTOM_FAST'], aggregates=[aggregate])
        hosts.append((host, api.provider('compute-%02d-numa0' % n, {
            'VCPU': {'total': 16}}, parent=host)))
    consumers = []
    for n in range(CONSUMERS):
        host, numa = hosts[n % HOSTS]
        consumer = str(uuid.uuid4())
        resources = {numa: {'VCPU': 1 + n % 3},
                     host: {'MEMORY_MB': 512 * (1 + n % 2)}}
        if n % 5 == 0:
            resources[disk] = {'DISK_GB': 20}
        api.allocate(consumer, resources,
                     project='proj-both' if n % 3 == 0 else 'proj-' + site,
                     user='user-' + site)
        consumers.append(consumer)
    return {'disk': disk, 'hosts': hosts, 'consumers': consumers}


@pytest.fixture(scope='module')
def sites(backend, scratch):
    """{site: (Placement's database URL, its Api, its cloud)}."""
    found = {}
    with placement_cloud.placement(backend, _folder(scratch, 'a')) as a, \
            placement_cloud.placement(backend, _folder(scratch, 'b')) as b:
        for site, (url, api) in (('a', a), ('b', b)):
            found[site] = (url, api, _fill(api, site))
        yield found


def _folder(scratch, name):
    path = os.path.join(scratch, name)
    os.makedirs(path, exist_ok=True)
    return path


@pytest.fixture(scope='module')
def merged(sites, database, scratch):
    """Both sites imported, each into its partition; the config."""
    config = services.write_config(os.path.join(scratch, 'aw.conf'),
                                   database, 'unused')
    for site in ('a', 'b'):
        summary = _import(config, sites[site][0], '--partition',
                          'site-' + site)
        assert summary['partition'] == 'site-' + site
        assert (summary['counts']['providers'],
                summary['counts']['consumers']) == (2 * HOSTS + 1,
                                                    CONSUMERS), summary
        assert summary['audit']['clean'], summary
    return config


def _import(config, url, *args):
    return json.loads(services.manage(
        config, 'placement', 'import', '--from-connection', url,
        '--format', 'json', *args).stdout)


def _refused(config, url, *args):
    """The one error line of an import that must be refused."""
    result = services.manage(config, 'placement', 'import',
                             '--from-connection', url, *args, check=False)
    assert result.returncode != 0, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('error: '), result.stderr
    return lines[0]


def _compare(config, api, *args):
    result = services.manage(config, 'placement', 'compare', '--format',
                             'json', '--endpoint', api.base, *args,
                             check=False)
    return result.returncode, json.loads(result.stdout or 'null')


def _assert_agree(config, sites, *which):
    for site in which:
        code, found = _compare(config, sites[site][1], '--partition',
                               'site-' + site)
        assert (code, found) == (0, {'differences': [], 'equal': True}), (
            site, found)


# Everything of a partition as rows, so that "left untouched" is
# checked row by row (generations and timestamps included).
_BOOKS = {
    'providers': (
        'SELECT p.uuid, p.name, p.generation, pa.uuid, r.uuid, '
        'p.created_at, p.updated_at FROM providers p '
        'LEFT JOIN providers pa ON pa.id = p.parent_provider_id '
        'LEFT JOIN providers r ON r.id = p.root_provider_id '
        'WHERE p.partition = :partition'),
    'inventories': (
        'SELECT p.uuid, i.resource_class_id, i.total, i.reserved, '
        'i.allocation_ratio, i.forced FROM inventories i '
        'JOIN providers p ON p.id = i.provider_id '
        'WHERE p.partition = :partition'),
    'usages': (
        'SELECT p.uuid, u.resource_class_id, u.used, u.free FROM usages u '
        'JOIN providers p ON p.id = u.provider_id '
        'WHERE p.partition = :partition'),
    'traits': (
        'SELECT p.uuid, t.trait_id FROM provider_traits t '
        'JOIN providers p ON p.id = t.provider_id '
        'WHERE p.partition = :partition'),
    'aggregates': (
        'SELECT p.uuid, g.aggregate_uuid FROM provider_aggregates g '
        'JOIN providers p ON p.id = g.provider_id '
        'WHERE p.partition = :partition'),
    'allocations': (
        'SELECT c.uuid, c.generation, c.project_id, c.user_id, '
        'c.consumer_type, c.updated_at, p.uuid, a.resource_class_id, '
        'a.used FROM allocations a JOIN consumers c ON c.id = a.consumer_id '
        'JOIN providers p ON p.id = a.provider_id '
        'WHERE p.partition = :partition'),
    'project_usages': (
        'SELECT * FROM project_usages WHERE project_id = :project'),
    'project_consumers': (
        'SELECT * FROM project_consumers WHERE project_id = :project'),
    'project_locks': (
        'SELECT * FROM project_locks WHERE project_id = :project'),
}


def _books(database, partition, project):
    """{table: sorted rows} of ``partition``'s books and of the counters
    of ``project`` (one whose consumers all live there)."""
    engine = sa.create_engine(database, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        found = {name: sorted((tuple(row) for row in conn.execute(
            sa.text(query), {'partition': partition, 'project': project})),
            key=repr) for name, query in _BOOKS.items()}
    engine.dispose()
    assert found['providers'] and found['allocations'], found
    return found


# -- two real Placements, merged --------------------------------------------

def test_each_partition_compares_clean_with_its_placement(sites, merged):
    _assert_agree(merged, sites, 'a', 'b')
    # Unscoped, allocworker holds the other site's providers too; scoped
    # to the wrong partition, nothing of the site is found.
    for args, missing in (((), 'b'), (('--partition', 'site-b'), 'a')):
        code, found = _compare(merged, sites['a'][1], *args)
        assert code == 1
        where = {d['where'] for d in found['differences']
                 if d['what'] == 'provider'}
        assert sites[missing][2]['disk'] in where
    code, found = _compare(merged, sites['a'][1], '--partition', 'site-c')
    assert code != 0 and found is None


@pytest.fixture(scope='module')
def shim(merged, database, scratch, keystone):
    """allocworker-api over the merged books, checking tokens against a
    real Keystone, a service user per site bound to the site's
    partition: (its URL, {site: the service user's token})."""
    users = keystone.service_users({'nova-' + site: ['admin', 'service']
                                    for site in 'ab'})
    server, port = services.start_api(
        database, scratch, name='shim', auth='keystone',
        stderr=subprocess.DEVNULL, extra=keystone.api_config({
            user_id: 'site-' + user[-1]
            for user, (user_id, _token) in users.items()}))
    try:
        yield 'http://127.0.0.1:%d' % port, {
            user[-1]: token for user, (_id, token) in users.items()}
    finally:
        server.kill()
        server.wait()


def test_each_service_user_sees_its_own_placement_through_the_shim(
        sites, merged, shim):
    # No --partition: the token's binding scopes what the shim shows,
    # usages of the project both sites share included.
    base, tokens = shim
    for site in ('a', 'b'):
        code, found = _compare(merged, sites[site][1], '--other-endpoint',
                               base, '--other-token', tokens[site])
        assert (code, found) == (0, {'differences': [], 'equal': True}), (
            site, found)
    code, found = _compare(merged, sites['a'][1], '--other-endpoint', base,
                           '--other-token', tokens['b'])
    assert code == 1 and found['differences']


def test_providers_show_their_partitions_over_rpc(sites, merged, rpc):
    for site in ('a', 'b'):
        cloud = sites[site][2]
        uuids = [cloud['disk']] + [u for pair in cloud['hosts'] for u in pair]
        items = rpc.get_providers(uuids=uuids)['items']
        assert {(i['status'], i['partition']) for i in items} == {
            (200, 'site-' + site)}, items
        names = {i['uuid']: i['name'] for i in items}
        assert names[cloud['hosts'][0][0]] == 'compute-01'
        consumer = one(rpc.get_allocations(
            consumer_uuids=[cloud['consumers'][4]]))
        assert consumer['status'] == 200 and set(
            consumer['allocations']) == set(cloud['hosts'][4]), consumer
    listed = [i for i in rpc.get_providers()['items']
              if i['name'] == 'compute-01']
    assert sorted(i['partition'] for i in listed) == ['site-a', 'site-b']


def test_a_second_first_pass_is_refused_and_force_stays_in_its_partition(
        sites, merged, database):
    url_a = sites['a'][0]
    other = _books(database, 'site-b', 'proj-b')
    before = _held(database)
    held = {row[0] for row in _books(database, 'site-a', None)[
        'allocations']}
    line = _refused(merged, url_a, '--partition', 'site-a')
    assert ('already holds %d providers and %d consumers in partition '
            'site-a' % (2 * HOSTS + 1, len(held))) in line, line
    assert _held(database) == before
    again = _import(merged, url_a, '--partition', 'site-a', '--force')
    assert again['counts']['consumers'] == len(held)
    assert again['audit']['clean']
    assert _held(database) == before
    assert _books(database, 'site-b', 'proj-b') == other
    _assert_agree(merged, sites, 'a', 'b')


def test_uuids_held_by_another_partition_are_refused(sites, merged,
                                                     database):
    before = _held(database)
    # Site A's Placement again, into a third partition: its providers
    # lie in site-a already.
    line = _refused(merged, sites['a'][0], '--partition', 'site-c')
    assert "%d of Placement's providers already lie in another partition" \
        % (2 * HOSTS + 1) in line and '(site-a, named ' in line, line
    assert _refused(merged, sites['a'][0], '--partition', 'Site A') \
        .startswith('error: --partition must be a partition name')
    assert _held(database) == before


def test_catch_up_stays_in_its_partition(sites, merged, database):
    (url_a, api_a, cloud_a), (url_b, api_b, cloud_b) = sites['a'], sites['b']
    # Placement B changes; then A, later: were the catch-up's mark not
    # site-b's own, A's newer stamps would hide B's move from it.
    host, numa = cloud_b['hosts'][-1]
    moved = cloud_b['consumers'][0]
    api_b.allocate(moved, {numa: {'VCPU': 2}}, project='proj-both',
                   user='user-b')
    newcomer = str(uuid.uuid4())
    api_b.allocate(newcomer, {host: {'MEMORY_MB': 256}}, project='proj-b',
                   user='user-b')
    api_b.call('DELETE', '/allocations/%s' % cloud_b['consumers'][1])
    time.sleep(0.1)
    newcomer_a = str(uuid.uuid4())
    api_a.allocate(newcomer_a, {cloud_a['hosts'][0][0]: {'MEMORY_MB': 256}},
                   project='proj-a', user='user-a')
    first = _import(merged, url_a, '--partition', 'site-a', '--catch-up',
                    '--overlap-seconds', '0')
    assert first['counts']['consumers'] == 1, first
    other = _books(database, 'site-a', 'proj-a')
    summary = _import(merged, url_b, '--partition', 'site-b', '--catch-up',
                      '--overlap-seconds', '0')
    counts = summary['counts']
    assert (counts['consumers'], counts['consumers_removed']) == (2, 1), \
        summary
    assert summary['audit']['clean']
    assert _books(database, 'site-a', 'proj-a') == other
    _assert_agree(merged, sites, 'a', 'b')
    # A consumer uuid that lives in site-a appears in Placement B: the
    # catch-up is refused before it writes; gone again, it passes.
    taken = cloud_a['consumers'][2]
    api_b.allocate(taken, {host: {'MEMORY_MB': 128}}, project='proj-b',
                   user='user-b')
    line = _refused(merged, url_b, '--partition', 'site-b', '--catch-up',
                    '--overlap-seconds', '0')
    assert ("1 of Placement's consumers already live in another partition "
            "of allocworker: %s (site-a)" % taken) in line, line
    assert _books(database, 'site-a', 'proj-a') == other
    api_b.call('DELETE', '/allocations/%s' % taken)
    _import(merged, url_b, '--partition', 'site-b', '--catch-up',
            '--overlap-seconds', '0')
    _assert_agree(merged, sites, 'a', 'b')


# -- the cheap cases, on SQLite and MariaDB ---------------------------------

# Target backend: Placement's backend (it runs on MariaDB/MySQL or
# PostgreSQL only, and the import reads those).
_SOURCES = {'sqlite': 'postgresql', 'mysql': 'mysql'}


@pytest.fixture(scope='module', params=sorted(_SOURCES))
def synthetic(request, scratch):
    """(config, target URL, {site: (Placement URL, provider uuids,
    consumer uuids, {consumer: provider row id})}) on one backend, the
    target synced and empty, both Placements filled with SQL."""
    backend, source = request.param, _SOURCES[request.param]
    folder = _folder(scratch, 'synthetic-' + backend)
    with services.fresh_database(backend, folder) as target, \
            services.fresh_database(source, folder) as a, \
            services.fresh_database(source, folder) as b:
        config = services.write_config(os.path.join(folder, 'aw.conf'),
                                       target, 'unused')
        services.manage(config, 'db', 'sync')
        sources = {}
        for site, url in (('a', a), ('b', b)):
            bench.placement_schema(url, _folder(folder, site))
            sources[site] = (url,) + bench.fill(url, 6, 40)
        yield config, target, sources


def _set_consumer_uuid(url, old, new):
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        for table, column in (('allocations', 'consumer_id'),
                              ('consumers', 'uuid')):
            conn.execute(sa.text('UPDATE %s SET %s = :new WHERE %s = :old'
                                 % (table, column, column)),
                         {'new': new, 'old': old})
    engine.dispose()


def test_merging_on_sqlite_and_mariadb(synthetic):
    config, target, sources = synthetic
    url_a, _providers, consumers_a, where_a = sources['a']
    url_b, _providers, consumers_b, _where = sources['b']
    _import(config, url_a, '--partition', 'site-a')
    # One of B's consumers carries a uuid that lives in site-a: the
    # first pass is refused before it writes.
    _set_consumer_uuid(url_b, consumers_b[5], consumers_a[7])
    line = _refused(config, url_b, '--partition', 'site-b')
    assert "1 of Placement's consumers already live in another partition " \
        "of allocworker: %s (site-a)" % consumers_a[7] in line, line
    assert _held(target) == [6, 40, 80]
    _set_consumer_uuid(url_b, consumers_a[7], consumers_b[5])
    summary = _import(config, url_b, '--partition', 'site-b')
    assert summary['counts']['providers'] == 6 and summary['audit']['clean']
    other = _books(target, 'site-b', 'p-none')
    # --force and a catch-up into site-a leave site-b as it was.
    _import(config, url_a, '--partition', 'site-a', '--force')
    assert _books(target, 'site-b', 'p-none') == other
    assert bench.change(url_a, consumers_a, where_a, 6, 0.1) == {
        'moved': 2, 'deleted': 1, 'new': 1}
    later = _import(config, url_a, '--partition', 'site-a', '--catch-up',
                    '--overlap-seconds', '0')
    assert (later['counts']['consumers'],
            later['counts']['consumers_removed']) == (3, 1), later
    assert later['audit']['clean']
    assert _books(target, 'site-b', 'p-none') == other
    assert _held(target) == [12, 80, 159]
