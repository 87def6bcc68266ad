"""Faults of a three-node MariaDB Galera cluster behind HAProxy (all writes
to one node, the others backups; tools/galera-cluster.sh), under keyed
load that creates, rewrites and deletes consumers through allocworker's
client library, served by three worker processes: the writer killed, the
writer frozen, the writer cut off from the others, every node killed, a
node rejoining by incremental and by full state transfer.

Each test prints its figures and ends with every call answered, no item
but 200 (the retry policy waits out each failover), nothing acknowledged
lost, every uuid's generations strictly increasing, the audit clean (no
overcommit) and the same table checksums on all three nodes. Only this
cluster's own nodes and HAProxy are started and stopped here."""

import json
import os
import signal
import subprocess
import time
import uuid

import pytest

from tests.faults import galera as cluster
from tests.faults.galera import KeyedRewrites
from tests.functional import services
from tests.functional.helpers import alloc_item
from tests.functional.helpers import provider

CALL_TIMEOUT = 8

pytestmark = pytest.mark.skipif(
    not (os.path.exists(cluster.PROVIDER) and os.geteuid() == 0),
    reason='needs root and galera-4 (%s) to start a cluster'
    % cluster.PROVIDER)


@pytest.fixture(scope='module')
def galera():
    nodes = cluster.Galera().start()
    yield nodes
    nodes.stop()


@pytest.fixture(scope='module')
def database_name(galera):
    name = 'aw_galera_%s' % uuid.uuid4().hex[:10]
    yield name
    cluster.drop_database(name)


@pytest.fixture(scope='module')
def client(galera, database_name, scratch):
    """A bare client, and three worker processes reaching the database
    through HAProxy's writer listener."""
    url = cluster.fresh_database(database_name)
    topic = 'aw-galera-%s' % uuid.uuid4().hex[:8]
    config = services.write_config(
        os.path.join(scratch, 'galera-worker.conf'), url, topic, workers=3,
        extra=cluster.WORKER_CONFIG)
    services.manage(config, 'db', 'sync')
    rpc = services.BareClient(topic)
    rpc.topic = topic
    rpc.worker = services.Worker(config).start(rpc)
    yield rpc
    assert rpc.worker.stop() == 0


@pytest.fixture(scope='module')
def library(client):
    return cluster.Library(client, client.topic)


@pytest.fixture
def hosts(client):
    # Tight enough that the load meets capacity.exceeded now and then,
    # so the audit's overcommit check has something to judge.
    return [provider(client, {'VCPU': {'total': 400}})[0] for _ in range(4)]


@pytest.fixture
def roomy(client):
    """A provider the load never fills, for ``writes_again``: on the
    load's hosts, a keyed probe refused for capacity would be answered
    that refusal again and again (a key keeps its first answer)."""
    return provider(client, {'VCPU': {'total': 100000}})[0]


def writes_again(rpc, roomy, within=60):
    """Seconds until a new keyed single allocate on ``roomy`` answers 200."""
    began = time.monotonic()
    item = alloc_item(str(uuid.uuid4()), {roomy: {'VCPU': 1}},
                      idempotency_key=str(uuid.uuid4()))
    while time.monotonic() - began < within:
        try:
            answer = rpc.call('allocate', items=[item], rpc_timeout=2)
            if answer['items'][0]['status'] == 200:
                return time.monotonic() - began
        except Exception:
            pass
        time.sleep(0.1)
    raise AssertionError('no write answered within %d s' % within)


def end(load, name, client, galera, database_name, allowed=((200, None),)):
    cluster.finish(load, name, client.worker, galera, database_name,
                   allowed + ((409, 'capacity.exceeded'),))


def test_writer_killed_mid_transaction_then_back_by_ist(
        galera, client, library, hosts, roomy, database_name):
    writer = galera.writer()
    load = KeyedRewrites(library, hosts, rpc_timeout=CALL_TIMEOUT).start()
    time.sleep(4)
    galera.kill(writer)
    resumed = writes_again(client, roomy)
    new_writer = galera.writer()
    assert new_writer != writer
    time.sleep(3)
    offset = galera.log_size(writer)
    began = time.monotonic()
    galera.script('start')
    rejoined = time.monotonic() - began
    log = galera.log_since(writer, offset)
    time.sleep(3)
    print('\nwriter galera%d SIGKILLed: writes answered again after %.1f s '
          '(writer now galera%d); galera%d back by IST in %.1f s'
          % (writer, resumed, new_writer, writer, rejoined))
    # The SST script runs either way; it reports which transfer it did.
    assert 'rsync IST completed on joiner' in log
    assert 'SST completed on joiner' not in log   # no full copy
    # The node that came back waits as a standby: no second failover.
    assert galera.writer() == new_writer
    end(load, 'writer killed', client, galera, database_name)


def test_writer_frozen_for_30_seconds(
        galera, client, library, hosts, roomy, database_name):
    writer = galera.writer()
    load = KeyedRewrites(library, hosts, rpc_timeout=CALL_TIMEOUT).start()
    time.sleep(4)
    galera.kill(writer, signal.SIGSTOP)
    frozen = time.monotonic()
    try:
        resumed = writes_again(client, roomy)
        time.sleep(max(0, 30 - (time.monotonic() - frozen)))
    finally:
        galera.kill(writer, signal.SIGCONT)
    new_writer = galera.writer()
    began = time.monotonic()
    galera.await_synced()
    print('\nwriter galera%d frozen 30 s: writes answered again after %.1f s '
          '(writer now galera%d); thawed, Synced again after %.1f s'
          % (writer, resumed, new_writer, time.monotonic() - began))
    assert new_writer != writer
    time.sleep(3)
    assert galera.writer() == new_writer
    end(load, 'writer frozen', client, galera, database_name)


def test_writer_cut_off_from_the_others(
        galera, client, library, hosts, roomy, database_name):
    """gmcast.isolate: the writer leaves the Primary Component and
    refuses writes (1047); HAProxy moves to a node of the majority."""
    writer = galera.writer()
    load = KeyedRewrites(library, hosts, rpc_timeout=CALL_TIMEOUT).start()
    time.sleep(4)
    galera.sql(writer, "SET GLOBAL wsrep_provider_options = "
                       "'gmcast.isolate=1'")
    try:
        resumed = writes_again(client, roomy)
        state = galera.state(writer)
        time.sleep(5)
    finally:
        galera.sql(writer, "SET GLOBAL wsrep_provider_options = "
                           "'gmcast.isolate=0'")
    began = time.monotonic()
    galera.await_synced()
    print('\nwriter galera%d cut off (%s): writes answered again after '
          '%.1f s; mended, Synced again after %.1f s'
          % (writer, state, resumed, time.monotonic() - began))
    assert 'Primary' not in state.split()
    assert galera.writer() != writer
    end(load, 'writer cut off', client, galera, database_name)


def test_every_node_killed_then_recovered_by_the_script(
        galera, client, library, hosts, roomy, database_name):
    load = KeyedRewrites(library, hosts, rpc_timeout=CALL_TIMEOUT).start()
    time.sleep(4)
    for node in cluster.NODES:
        galera.kill(node)
    killed = time.monotonic()
    time.sleep(2)
    recovery = galera.script('start', timeout=300)
    recovered = time.monotonic() - killed
    resumed = writes_again(client, roomy)
    print('\nall three nodes SIGKILLed: the script recovered the cluster '
          '%.1f s after the kill, writes answered %.1f s after that\n%s'
          % (recovered, resumed, recovery.strip()))
    time.sleep(3)
    end(load, 'every node killed', client, galera, database_name)


def test_node_with_lost_data_rejoins_by_full_transfer_from_a_standby(
        galera, client, library, hosts, database_name):
    """A standby whose data is gone needs a full copy (SST, which blocks
    its donor): the script names the other standby as donor, so the
    writer never stalls for it."""
    writer = galera.writer()
    away, donor = [n for n in cluster.NODES if n != writer]
    load = KeyedRewrites(library, hosts, rpc_timeout=CALL_TIMEOUT).start()
    time.sleep(3)
    galera.kill(away)
    time.sleep(1)
    data = os.path.join(cluster.BASE, 'node%d' % away, 'data')
    os.rename(os.path.join(data, 'grastate.dat'),
              os.path.join(data, 'grastate.dat.lost'))
    offset = galera.log_size(away)
    began = time.monotonic()
    galera.script('start')
    rejoined = time.monotonic() - began
    log = galera.log_since(away, offset)
    selected = [line for line in log.splitlines() if 'as donor' in line]
    print('\ngalera%d without its state: back by full transfer in %.1f s; '
          '%s' % (away, rejoined, selected[-1].split('WSREP: ')[-1]
                  if selected else 'no donor line'))
    assert 'rsync SST completed on joiner' in log
    assert selected and '(galera%d)' % donor in selected[-1]
    assert galera.writer() == writer
    time.sleep(3)
    end(load, 'full transfer', client, galera, database_name)


def upgrade_check(config):
    result = subprocess.run(
        [os.path.join(services.BIN, 'allocworker-status'), '--config-file',
         config, 'upgrade', 'check', '--json'], capture_output=True,
        text=True, timeout=120)
    return result.returncode, {c['check']: c for c in
                               json.loads(result.stdout)['checks']}


def test_upgrade_check_warns_of_settings_that_lose_commits(galera, client):
    """Through HAProxy: the cluster as the script starts it passes; the
    writer set to flush its log once a second is a warning."""
    config = client.worker.config_file
    code, checks = upgrade_check(config)
    assert code == 0, checks
    writer = galera.writer()
    galera.sql(writer, 'SET GLOBAL innodb_flush_log_at_trx_commit = 2')
    try:
        code, checks = upgrade_check(config)
    finally:
        galera.sql(writer, 'SET GLOBAL innodb_flush_log_at_trx_commit = 1')
    durability = checks['Acknowledged commits survive a crash']
    assert code == 1, checks
    assert durability['details'].startswith(
        'innodb_flush_log_at_trx_commit = 2: commits acknowledged')


def readers_sessions(galera):
    """Connections HAProxy's readers listener has taken so far."""
    for line in galera.script('haproxy', 'show stat').splitlines():
        fields = line.split(',')
        if fields[:2] == ['galera_readers', 'FRONTEND']:
            return int(fields[7])
    raise AssertionError('no galera_readers frontend in HAProxy stats')


def test_other_nodes_serve_stale_reads_through_the_readers_listener(
        galera, client, database_name, scratch, hosts):
    """[database] slave_connection on HAProxy's second listener (all three
    nodes, least connections): listings are read there, and with
    mysql_wsrep_sync_wait = 1 they still show a write just made through
    the writer."""
    topic = 'aw-galera-readers-%s' % uuid.uuid4().hex[:8]
    config = services.write_config(
        os.path.join(scratch, 'galera-readers.conf'),
        '%s/%s?charset=utf8mb4' % (cluster.WRITER_URL, database_name), topic,
        extra='[database]\nslave_connection = %s/%s?charset=utf8mb4\n'
              'mysql_wsrep_sync_wait = 1\n'
        % (cluster.READER_URL, database_name))
    reader = services.BareClient(topic)
    worker = services.Worker(config).start(reader)
    try:
        before = readers_sessions(galera)
        consumer = str(uuid.uuid4())
        assert allocate_one(client, consumer, hosts[0])['status'] == 200
        listed = reader.list_allocations(provider_uuid=hosts[0])
        assert listed['status'] == 200
        assert consumer in [i['consumer_uuid'] for i in listed['items']]
        assert readers_sessions(galera) > before
    finally:
        assert worker.stop() == 0
        reader.transport.cleanup()


def allocate_one(rpc, consumer, host):
    return rpc.call('allocate', items=[alloc_item(
        consumer, {host: {'VCPU': 1}})])['items'][0]
