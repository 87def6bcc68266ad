"""The three-node RabbitMQ cluster of tools/rabbit-cluster.sh, and workers
and clients that reach it through a multi-host transport_url with quorum
queues (the settings doc/deployment.md recommends)."""

import json
import os
import signal
import subprocess
import time
import uuid

import oslo_messaging as messaging

from tests.functional import services

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
SCRIPT = os.path.join(ROOT, 'tools', 'rabbit-cluster.sh')
BASE = os.environ.get('AW_RABBIT_CLUSTER_DIR',
                      '/tmp/allocworker-rabbit-cluster')
NODES = (1, 2, 3)
RABBITMQ_SERVER = '/usr/lib/rabbitmq/bin/rabbitmq-server'

# What the tests run with, on workers and clients alike. A dead or hung
# node is noticed after about twice the heartbeat threshold; the socket
# timeout oslo.messaging puts on a publish is min(threshold, call timeout).
HEARTBEAT = 4
RABBIT_OPTIONS = {
    'rabbit_quorum_queue': True,
    'rabbit_transient_quorum_queue': True,
    'heartbeat_timeout_threshold': HEARTBEAT,
    'kombu_failover_strategy': 'shuffle',
    'rabbit_retry_interval': 1,
    'rabbit_interval_max': 2,
}


# A call's publish is tried on at most this many fresh connections after
# the first (the next node of the URL; with 0 a new connection to a hung
# node would not even fail over); each try waits at most min(HEARTBEAT,
# call timeout) for the broker's confirm. None (oslo.messaging's default)
# tries for ever. Mirrors [worker] publish_retries.
PUBLISH_RETRY = 1


class Cluster(object):
    """Control of the three nodes (never of the default rabbit@localhost)."""

    def __init__(self):
        self.started_here = False
        self.url = None

    def start(self):
        running = subprocess.run([SCRIPT, 'status'], capture_output=True,
                                 text=True).stdout
        self.started_here = 'running members' not in running
        try:
            self.url = self._script('start').strip().splitlines()[-1]
        except AssertionError:
            # Left partitioned by an interrupted run: start afresh.
            self._script('reset')
            self.started_here = True
            self.url = self._script('start').strip().splitlines()[-1]
        return self

    def stop(self):
        self.thaw_all()
        if self.started_here:
            self._script('stop')

    def _script(self, *args, timeout=180):
        result = subprocess.run([SCRIPT] + list(args), capture_output=True,
                                text=True, timeout=timeout)
        if result.returncode != 0:
            raise AssertionError('rabbit-cluster.sh %s: %s%s'
                                 % (' '.join(args), result.stdout,
                                    result.stderr))
        return result.stdout

    def ctl(self, node, *args, timeout=120):
        return self._script('ctl', str(node), *args, timeout=timeout)

    def pid(self, node):
        with open(os.path.join(BASE, 'rmq%d' % node, 'rmq.pid')) as f:
            return int(f.read().strip())

    def port(self, node):
        return 5680 + node

    def stop_app(self, node):
        self.ctl(node, 'stop_app')

    def start_app(self, node):
        self.ctl(node, 'start_app')
        self.ctl(node, 'await_startup')

    def freeze(self, node):
        os.kill(self.pid(node), signal.SIGSTOP)

    def thaw(self, node):
        os.kill(self.pid(node), signal.SIGCONT)

    def thaw_all(self):
        for node in NODES:
            try:
                self.thaw(node)
            except (OSError, ValueError):
                pass

    def leader(self, queue, via=None):
        """The node number leading quorum queue ``queue``."""
        for node in ([via] if via else NODES):
            try:
                rows = json.loads(self.ctl(node, 'list_queues', 'name',
                                           'leader', '--formatter', 'json',
                                           timeout=30))
            except (AssertionError, ValueError, subprocess.TimeoutExpired):
                continue
            for row in rows:
                if row['name'] == queue:
                    return int(row['leader'].split('@')[0][3:])
        raise AssertionError('no leader found for %s' % queue)

    def _status(self, node):
        try:
            return json.loads(self.ctl(node, 'cluster_status', '--formatter',
                                       'json', timeout=30))
        except (AssertionError, ValueError, subprocess.TimeoutExpired):
            return None

    def whole(self):
        """Every node runs and sees all three, with no partition."""
        for node in NODES:
            status = self._status(node)
            if (not status or len(status['running_nodes']) != len(NODES)
                    or status.get('partitions')):
                return False
        return True

    def heal(self, node, seconds=90):
        """After ``node`` hung longer than net_ticktime the others have
        declared it down, and when it runs again Mnesia reports a
        partition (pause_minority keeps the cluster serving meanwhile).
        The operator's cure, done here: restart the RabbitMQ application
        on that node. Answers the seconds it took."""
        began = time.monotonic()
        time.sleep(3)
        if not self.whole():
            self.ctl(node, 'stop_app')
            self.ctl(node, 'start_app')
        while not self.whole():
            if time.monotonic() - began > seconds:
                raise AssertionError('cluster not whole after %d s' % seconds)
            time.sleep(1)
        return time.monotonic() - began


def write_config(path, db_url, topic, host, url, workers=2, extra=''):
    """A worker configuration on the cluster with quorum queues."""
    rabbit = ''.join('%s = %s\n' % (k, str(v).lower() if v is True else v)
                     for k, v in RABBIT_OPTIONS.items())
    directory = os.path.dirname(path)
    with open(path, 'w') as f:
        f.write('[DEFAULT]\ntransport_url = %s\nstate_path = %s\n'
                'log_file = %s\nhost = %s\nrpc_response_timeout = 30\n'
                '[database]\nconnection = %s\n'
                '[worker]\ntopic = %s\nworkers = %d\nshutdown_timeout = 20\n'
                '[oslo_messaging_rabbit]\n%s%s'
                % (url, directory, os.path.join(directory, host + '.log'),
                   host, db_url, topic, workers, rabbit, extra))
    return path


class ClusterClient(services.BareClient):
    """The design's bare client, on the cluster. The test process's
    global CONF carries RABBIT_OPTIONS (see the ``quorum_conf`` fixture)."""

    def __init__(self, topic, url, timeout=30):
        from oslo_config import cfg
        self.transport = messaging.get_rpc_transport(cfg.CONF, url=url)
        target = messaging.Target(topic=topic, version='1.0')
        self.client = messaging.get_rpc_client(self.transport, target,
                                               timeout=timeout,
                                               retry=PUBLISH_RETRY)
        self.context = {'request_id': 'req-%s' % uuid.uuid4(),
                        'roles': ['admin'], 'project_id': 'test-project',
                        'user_id': 'test-user'}

    def close(self):
        self.transport.cleanup()
