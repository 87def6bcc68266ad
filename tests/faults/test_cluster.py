"""Faults of a three-node RabbitMQ cluster with quorum queues, under load
from many clients with keyed batches, served by two worker hosts (each
with two processes) on one topic: the node leading the queues stopped and
started, a node frozen and thawed. Each test prints its figures and ends
with every acknowledged write present and the audit clean."""

import os
import signal
import subprocess
import time
import uuid

import pytest

from allocworker.conf import CONF
from tests.faults import cluster
from tests.faults import load as faults
from tests.faults import netns
from tests.faults.load import Load
from tests.functional import services
from tests.functional.helpers import provider

BACKENDS = ['postgresql']
CALL_TIMEOUT = 5


@pytest.fixture(scope='module')
def cluster_topic():
    return 'aw-cluster-%s' % uuid.uuid4().hex[:8]


@pytest.fixture(scope='module')
def client(rabbit_cluster, quorum_conf, cluster_topic):
    rpc = cluster.ClusterClient(cluster_topic, rabbit_cluster.url)
    yield rpc
    rpc.close()


@pytest.fixture(scope='module')
def library(client, cluster_topic):
    return cluster.LibraryClient(client, cluster_topic)


@pytest.fixture(scope='module')
def worker_hosts(rabbit_cluster, database, scratch, cluster_topic, client):
    """Two worker hosts, "ctl-a" and "ctl-b", two processes each."""
    workers = {}
    for host in ('ctl-a', 'ctl-b'):
        config = cluster.write_config(
            os.path.join(scratch, '%s.conf' % host), database,
            cluster_topic, host, rabbit_cluster.url)
        workers[host] = start_host(config, client)
    yield workers
    for worker in workers.values():
        assert worker.stop() == 0


@pytest.fixture
def hosts(client, worker_hosts):
    return [provider(client, {'VCPU': {'total': 100000}})[0]
            for _ in range(4)]


class NamespacedWorker(services.Worker):
    """allocworker-worker run inside a network namespace."""

    def __init__(self, config_file, namespace):
        super().__init__(config_file)
        self.namespace = namespace

    def start(self, client, timeout=60):
        self.process = subprocess.Popen(
            self.namespace.command(
                [os.path.join(services.BIN, 'allocworker-worker'),
                 '--config-file', self.config_file]),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        return self


def start_host(config, client, processes=2, worker=None):
    """Start a worker host and wait until each of its processes answers
    on its own direct target (a call sent before a process has declared
    its queue would be dropped by the exchange)."""
    worker = (worker or services.Worker(config)).start(client)
    host = open(config).read().split('\nhost = ')[1].split()[0]
    for index in range(processes):
        deadline = time.monotonic() + 60
        while True:
            try:
                client.call('list_resource_classes', rpc_timeout=2,
                            server='%s.%d' % (host, index))
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
    return worker


def test_two_hosts_serve_one_topic_on_quorum_queues(
        rabbit_cluster, client, worker_hosts, cluster_topic):
    for host in worker_hosts:
        for index in (0, 1):
            assert client.call('list_resource_classes',
                               server='%s.%d' % (host, index))
    queues = rabbit_cluster.ctl(1, 'list_queues', 'name', 'type')
    types = dict(line.split('\t') for line in queues.splitlines()
                 if line.startswith(cluster_topic))
    assert types[cluster_topic] == 'quorum'
    assert types['%s.ctl-b.1' % cluster_topic] == 'quorum'


def test_stop_and_start_of_the_leading_node(
        rabbit_cluster, client, worker_hosts, hosts, cluster_topic):
    leader = rabbit_cluster.leader(cluster_topic)
    load = Load(client, hosts, clients=8, rpc_timeout=CALL_TIMEOUT).start()
    time.sleep(3)
    stopped = time.monotonic()
    try:
        rabbit_cluster.stop_app(leader)
        resumed = faults.answers_again(client, within=30)
        new_leader = rabbit_cluster.leader(
            cluster_topic, via=1 + leader % 3)
        time.sleep(5)
    finally:
        rabbit_cluster.start_app(leader)
    back = faults.answers_again(client, within=30)
    print('\nleader rmq%d stop_app: answered again after %.1f s (leader now '
          'rmq%d); %.1f s after start_app; down %.0f s in all'
          % (leader, resumed, new_leader, back, time.monotonic() - stopped))
    time.sleep(5)
    faults.finish(load, 'leader stop/start', worker_hosts['ctl-a'])
    assert resumed <= 5
    assert back <= 5


def test_freeze_and_thaw_of_the_leading_node(
        rabbit_cluster, client, library, worker_hosts, hosts, cluster_topic):
    leader = rabbit_cluster.leader(cluster_topic)
    # Longer than a client's or worker's heartbeat detection (2 x
    # HEARTBEAT) plus the nodes' own (net_ticktime, 10 s).
    frozen_for = 25
    # The load calls through allocworker.rpcapi, whose deadline is under
    # test; the probes below use the bare client.
    load = Load(library, hosts, clients=8, rpc_timeout=CALL_TIMEOUT).start()
    time.sleep(3)
    rabbit_cluster.freeze(leader)
    frozen = time.monotonic()
    try:
        resumed = faults.answers_again(client, within=frozen_for, must=False)
        time.sleep(max(0, frozen_for - (time.monotonic() - frozen)))
    finally:
        rabbit_cluster.thaw(leader)
    back = faults.answers_again(client, within=30)
    healed = rabbit_cluster.heal(leader)
    time.sleep(5)
    print('\nleader rmq%d frozen %d s: answered again after %s s while '
          'frozen; %.1f s after the thaw; cluster whole again after %.1f s'
          % (leader, frozen_for, resumed and '%.1f' % resumed, back, healed))
    faults.finish(load, 'leader freeze/thaw', worker_hosts['ctl-a'])
    # No call blocked much past its own timeout: rpcapi gives up after
    # the timeout plus [worker] call_grace, whatever oslo.messaging is
    # blocked on (without that deadline: up to 20 s; with oslo.messaging's
    # default of retrying publishes for ever: 70 s).
    assert load.worst_attempt <= CALL_TIMEOUT + CONF.worker.call_grace + 1
    # The workers still stop cleanly, promptly.
    for host, worker in list(worker_hosts.items()):
        began = time.monotonic()
        code = worker.stop(timeout=30)
        print('SIGTERM after the freeze: %s exited %d in %.1f s'
              % (host, code, time.monotonic() - began))
        assert code == 0
        worker_hosts[host] = start_host(worker.config_file, client)


@pytest.mark.skipif(os.geteuid() != 0,
                    reason='network namespaces need root')
def test_worker_host_cut_off_mid_transactions(
        rabbit_cluster, client, worker_hosts, hosts, cluster_topic, database,
        scratch):
    """A third host, ctl-c, in a network namespace; cut off from broker
    and database under load, then mended."""
    ports = [rabbit_cluster.port(n) for n in cluster.NODES] + [5432]
    namespace = netns.Namespace(ports).create()
    worker = None
    try:
        config = cluster.write_config(
            os.path.join(scratch, 'ctl-c.conf'),
            database.replace('127.0.0.1', namespace.host_ip), cluster_topic,
            'ctl-c', rabbit_cluster.url.replace('127.0.0.1',
                                                namespace.host_ip))
        worker = NamespacedWorker(config, namespace)
        start_host(config, client, worker=worker)
        load = Load(client, hosts, clients=8,
                    rpc_timeout=CALL_TIMEOUT).start()
        time.sleep(4)
        namespace.cut()
        resumed = faults.answers_again(client, within=30)
        time.sleep(10)
        namespace.mend()
        time.sleep(5)
        print('\nctl-c cut off: others answered after %.1f s' % resumed)
        faults.finish(load, 'worker host cut off', worker_hosts['ctl-a'])
        assert set(load.statuses) == {(200, None)}
        began = time.monotonic()
        code = worker.stop(timeout=60)
        print('ctl-c after the cut: SIGTERM, exited %d in %.1f s'
              % (code, time.monotonic() - began))
        assert code == 0
    finally:
        if worker and worker.process and worker.process.poll() is None:
            os.killpg(worker.process.pid, signal.SIGKILL)
            worker.process.wait()
        namespace.destroy()
