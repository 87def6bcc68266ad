"""A PostgreSQL primary with a streaming replica (tools/pg-replica.sh,
pg_basebackup -R, ports 5441 and 5442, beside the default server): the
replica as the workers' ``[database] slave_connection`` for listings and
usages, a lagging replica that never changes a write's outcome, and the
replica promoted under keyed load after the primary crashed, with
synchronous_commit = remote_apply: nothing acknowledged lost."""

import os
import shutil
import subprocess
import time
import uuid

import pytest
import sqlalchemy as sa

from tests.faults import load as faults
from tests.faults.load import Load
from tests.functional import jsonhttp
from tests.functional import services
from tests.functional.helpers import allocate
from tests.functional.helpers import one
from tests.functional.helpers import provider

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
SCRIPT = os.path.join(ROOT, 'tools', 'pg-replica.sh')
BASE = os.environ.get('AW_PG_REPLICA_DIR', '/tmp/allocworker-pg-replica')

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which('pg_basebackup'),
    reason='needs root and the PostgreSQL server binaries')


def script(*args, timeout=120):
    result = subprocess.run([SCRIPT] + list(args), capture_output=True,
                            text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip()


@pytest.fixture(scope='module')
def pair():
    """A fresh primary and replica (the promotion test leaves them
    diverged, so they are made anew for each run and removed after)."""
    script('reset')
    script('start')
    yield
    script('reset')


@pytest.fixture(scope='module')
def database(pair):
    name = 'aw_replica_%s' % uuid.uuid4().hex[:10]
    engine = sa.create_engine(script('url') + '/postgres',
                              isolation_level='AUTOCOMMIT',
                              poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        conn.exec_driver_sql('CREATE DATABASE %s' % name)
    engine.dispose()
    return name


@pytest.fixture(scope='module')
def client(database, scratch):
    """Three worker processes: writes on the primary, listings and
    usages on the replica."""
    topic = 'aw-replica-%s' % uuid.uuid4().hex[:8]
    config = services.write_config(
        os.path.join(scratch, 'replica-worker.conf'),
        '%s/%s' % (script('url'), database), topic, workers=3,
        extra='[database]\nslave_connection = %s/%s\n'
              '[worker]\nretry_unavailable_seconds = 20\n'
        % (script('url', 'replica'), database))
    services.manage(config, 'db', 'sync')
    rpc = services.BareClient(topic)
    rpc.topic, rpc.scratch, rpc.database = topic, scratch, database
    rpc.worker = services.Worker(config).start(rpc)
    yield rpc
    rpc.worker.stop()


def replayed(seconds=30):
    """Wait until the replica has replayed everything it received."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        lag = script('psql', 'primary', '-XAtqc',
                     'SELECT pg_current_wal_lsn() - replay_lsn '
                     'FROM pg_stat_replication')
        if lag == '0':
            return
        time.sleep(0.2)
    raise AssertionError('the replica did not catch up')


def test_a_lagging_replica_serves_listings_but_never_judges_a_write(
        client):
    host, _ = provider(client, {'VCPU': {'total': 2}})
    replayed()
    script('async')   # commits must not wait for the paused replica
    script('pause')
    try:
        first = str(uuid.uuid4())
        taken = allocate(client, first, {host: {'VCPU': 2}})
        assert taken['status'] == 200
        # The listing and the usages come from the replica, which has
        # not replayed that write.
        listed = client.list_allocations(provider_uuid=host)
        assert (listed['status'], listed['items']) == (200, [])
        assert one(client.get_usages(provider_uuids=[host]))['usages'] == \
            {'VCPU': 0}
        # Every write is judged on the primary: the replica's free VCPUs
        # change nothing.
        refused = allocate(client, str(uuid.uuid4()), {host: {'VCPU': 1}})
        assert (refused['status'], refused['code']) == \
            (409, 'capacity.exceeded')
        rewrite = allocate(client, first, {host: {'VCPU': 1}},
                           generation=taken['consumer_generation'])
        assert rewrite['status'] == 200
        # So is the read a caller's next write depends on.
        assert one(client.get_allocations(consumer_uuids=[first]))[
            'consumer_generation'] == rewrite['consumer_generation']
    finally:
        script('resume')
        script('sync')
    replayed()
    listed, = client.list_allocations(provider_uuid=host)['items']
    assert listed['consumer_generation'] == rewrite['consumer_generation']


def shim(base, method, path, body=None):
    """(status, body) of a Placement API request at microversion 1.28."""
    status, answer = jsonhttp.call(base + path, method, body,
                                   jsonhttp.placement_headers('1.28'))
    return status, answer or {}


def test_the_shims_stale_candidates_are_refused_by_the_write(client):
    """[api] stale_reads: GET /allocation_candidates and the provider
    list read the paused replica, which still shows a full provider
    with room; the allocation written for that candidate is judged on
    the primary and refused."""
    host, _ = provider(client, {'VCPU': {'total': 2}})
    replayed()
    port = services.free_port()
    config = services.write_config(
        os.path.join(client.scratch, 'stale-api.conf'),
        '%s/%s' % (script('url'), client.database), 'unused',
        extra='[database]\nslave_connection = %s/%s\n[api]\n'
              'auth_strategy = noauth2\nport = %d\nstale_reads = true\n'
        % (script('url', 'replica'), client.database, port))
    api = subprocess.Popen([os.path.join(services.BIN, 'allocworker-api'),
                            '--config-file', config],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    base = 'http://127.0.0.1:%d' % port
    script('async')
    script('pause')
    try:
        services.wait_for_http(base)
        assert allocate(client, str(uuid.uuid4()),
                        {host: {'VCPU': 2}})['status'] == 200
        status, found = shim(base, 'GET',
                             '/allocation_candidates?resources=VCPU:1')
        assert status == 200
        assert host in found['provider_summaries']
        status, listed = shim(base, 'GET', '/resource_providers?'
                              'resources=VCPU:1')
        assert host in [p['uuid'] for p in listed['resource_providers']]
        status, refused = shim(base, 'PUT', '/allocations/%s' % uuid.uuid4(),
                               {'allocations': {host: {'resources':
                                                       {'VCPU': 1}}},
                                'project_id': 'p', 'user_id': 'u',
                                'consumer_generation': None})
        assert status == 409, refused
    finally:
        script('resume')
        script('sync')
        api.terminate()
        api.wait()


def test_promotion_under_load_loses_nothing_with_remote_apply(client):
    """The primary crashes (immediate stop: no shutdown checkpoint, as a
    power cut) under keyed load; the replica is promoted and the workers
    are pointed at it (a virtual address or DNS name would move instead).
    Every commit the workers acknowledged had been applied on the replica
    (synchronous_commit = remote_apply), so none is lost."""
    hosts = [provider(client, {'VCPU': {'total': 100000}})[0]
             for _ in range(4)]
    load = Load(client, hosts, clients=6).start()
    time.sleep(4)
    crashed = time.monotonic()
    subprocess.run(['runuser', '-u', 'postgres', '--', 'sh', '-c',
                    '"$(ls -d /usr/lib/postgresql/*/bin | tail -1)/pg_ctl" '
                    '-D %s/primary -m immediate stop' % BASE],
                   check=True, capture_output=True, timeout=60)
    script('promote')
    promoted = time.monotonic() - crashed
    client.worker.stop()
    config = services.write_config(
        os.path.join(client.scratch, 'promoted-worker.conf'),
        '%s/%s' % (script('url', 'replica'), client.database),
        client.topic, workers=3)
    client.worker = services.Worker(config).start(client)
    resumed = faults.answers_again(client, within=60)
    print('\nprimary crashed: replica promoted %.1f s later; answered '
          'again %.1f s after the workers moved to it'
          % (promoted, resumed))
    time.sleep(4)
    faults.finish(load, 'promotion', client.worker)
