"""Faults under sustained load: a worker killed, a broker (a node of the
test's own) and the database restarted, a worker stopped. Each test ends
with the audit of the books clean and every acknowledged write present,
and prints its figures.
"""

import os
import signal
import subprocess
import time

import pytest

from tests.faults import cluster
from tests.faults import load as faults
from tests.faults.load import Load
from tests.functional import services
from tests.functional.helpers import provider

BACKENDS = ['postgresql']


@pytest.fixture
def hosts(rpc):
    return [provider(rpc, {'VCPU': {'total': 100000}})[0] for _ in range(4)]


def test_sigkill_of_a_worker_process_mid_batches(rpc, hosts):
    load = Load(rpc, hosts).start()
    time.sleep(3)
    victims = rpc.worker.child_pids()
    os.kill(victims[0], signal.SIGKILL)
    time.sleep(6)
    assert len(rpc.worker.child_pids()) == len(victims)  # replaced
    faults.finish(load, 'SIGKILL one worker process', rpc.worker)


def _solo_broker(action):
    result = subprocess.run([cluster.SCRIPT, 'solo', action], check=True,
                            capture_output=True, text=True, timeout=180)
    return result.stdout.strip().splitlines()[-1] if result.stdout else None


@pytest.fixture
def solo_broker():
    """A single-node RabbitMQ of this test's own (rmq4 of
    tools/rabbit-cluster.sh). The default node serves every other test, so
    it is never restarted: a broker that comes back wedged would otherwise
    hang the rest of the run."""
    if not os.path.exists(cluster.RABBITMQ_SERVER):
        pytest.skip('no %s to start a broker with' % cluster.RABBITMQ_SERVER)
    url = _solo_broker('start')
    yield url
    _solo_broker('stop')


def test_rabbitmq_restart_mid_load(database, scratch, solo_broker):
    topic = 'aw-restart-%d' % os.getpid()
    config = services.write_config('%s/restart.conf' % scratch, database,
                                   topic, workers=2,
                                   transport_url=solo_broker)
    client = services.BareClient(topic, url=solo_broker)
    worker = services.Worker(config).start(client)
    try:
        hosts = [provider(client, {'VCPU': {'total': 100000}})[0]
                 for _ in range(4)]
        load = Load(client, hosts).start()
        time.sleep(3)
        try:
            _solo_broker('stop')
            time.sleep(3)
        finally:
            _solo_broker('start')
        back = faults.answers_again(client, within=60)
        print('\ncalls answered again %.1f s after the broker returned'
              % back)
        assert back <= 30
        time.sleep(5)
        faults.finish(load, 'RabbitMQ restart', worker)
    finally:
        code = worker.stop()
        client.transport.cleanup()
    assert code == 0


def _postgresql(action):
    version = sorted(os.listdir('/etc/postgresql'))[-1]
    subprocess.run(['pg_ctlcluster', '--skip-systemctl-redirect', version,
                    'main', action], check=True, capture_output=True,
                   timeout=120)


@pytest.mark.skipif(not os.path.isdir('/etc/postgresql'),
                    reason='needs a local PostgreSQL cluster to restart')
def test_postgresql_restart_mid_load(rpc, hosts):
    faults.database_restart_under_load(rpc, hosts, 'PostgreSQL restart',
                                       lambda: _postgresql('restart'))


def test_sigterm_during_load_finishes_calls_then_exits_0(
        database, scratch, hosts, rpc):
    topic = 'aw-term-%d' % os.getpid()
    config = services.write_config('%s/term.conf' % scratch, database,
                                   topic, workers=2)
    client = services.BareClient(topic, timeout=30)
    worker = services.Worker(config).start(client)
    load = Load(client, hosts, clients=4).start()
    time.sleep(3)
    code = worker.stop()
    load.stopping.set()
    assert code == 0
    print('\nSIGTERM: worker exited %d' % code)
    # Calls the stopping worker had taken were answered; those sent after
    # wait in the queue (or are re-sent with their keys) for a new worker.
    restarted = services.Worker(config).start(client)
    try:
        load.stop()
        assert load.report('SIGTERM during load') == []
    finally:
        assert restarted.stop() == 0
