"""The soak run (not in CI): mixed load for a long time while worker
processes are killed at random, then the audit and the ledger.

    .venv/bin/python -m tests.faults.soak --minutes 30 [--kill-every 60]
    .venv/bin/python -m tests.faults.soak --cluster --minutes 30

With ``--cluster`` it runs on the three-node cluster of
tools/rabbit-cluster.sh with quorum queues and two worker hosts, and
every other fault is a RabbitMQ node stopped (stop_app) for 10 s instead
of a worker kill.

Prints its figures: calls made, answered, retried, acknowledged items,
lost (must be 0), worst call, and the audit result.
"""

import argparse
import os
import random
import signal
import sys
import tempfile
import time
import uuid

from tests.faults import cluster
from tests.faults.load import Load
from tests.functional import services


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--minutes', type=float, default=30)
    parser.add_argument('--kill-every', type=float, default=60,
                        help='seconds between SIGKILLs of a worker process')
    parser.add_argument('--workers', type=int, default=3)
    parser.add_argument('--clients', type=int, default=8)
    parser.add_argument('--mysql', action='store_true')
    parser.add_argument('--cluster', action='store_true',
                        help='three-node RabbitMQ cluster, quorum queues, '
                             'two worker hosts, node stops too')
    args = parser.parse_args(argv)
    from oslo_config import cfg
    cfg.CONF([], project='allocworker-soak')
    backend = 'mysql' if args.mysql else 'postgresql'
    with tempfile.TemporaryDirectory() as scratch, \
            services.fresh_database(backend, scratch) as database:
        topic = 'aw-soak-%s' % uuid.uuid4().hex[:8]
        nodes = None
        if args.cluster:
            nodes, client, workers = _on_cluster(scratch, database, topic,
                                                 args.workers)
            config = workers[0].config_file
        else:
            config = services.write_config(
                os.path.join(scratch, 'worker.conf'), database, topic,
                args.workers)
            services.manage(config, 'db', 'sync')
            client = services.BareClient(topic, timeout=30)
            workers = [services.Worker(config).start(client)]
        hosts = []
        for n in range(8):
            host = str(uuid.uuid4())
            gen = client.create_provider(uuid=host, name='soak-%d' % n)[
                'items'][0]['generation']
            client.set_inventories(provider_uuid=host,
                                   provider_generation=gen,
                                   inventories={'VCPU': {'total': 10 ** 8}})
            hosts.append(host)
        load = Load(client, hosts, clients=args.clients).start()
        deadline = time.time() + args.minutes * 60
        kills = stops = 0
        while time.time() < deadline:
            time.sleep(min(args.kill_every, max(0, deadline - time.time())))
            if time.time() >= deadline:
                break
            if nodes and (kills + stops) % 2:
                node = random.choice(cluster.NODES)
                nodes.stop_app(node)
                time.sleep(10)
                nodes.start_app(node)
                stops += 1
                continue
            children = random.choice(workers).child_pids()
            if children:
                os.kill(random.choice(children), signal.SIGKILL)
                kills += 1
        load.stop()
        lost = load.report('soak %.0f min, %d worker kills, %d node stops'
                           % (args.minutes, kills, stops))
        audit = services.manage(config, 'audit', '--grace-seconds', '600',
                                check=False)
        print('audit: exit %d: %s' % (audit.returncode,
                                      audit.stdout.strip()[:500]))
        for worker in workers:
            worker.stop()
        if nodes:
            client.close()
            nodes.stop()
    return 0 if not lost and audit.returncode == 0 else 1


def _on_cluster(scratch, database, topic, processes):
    """The cluster, a client with the cluster settings, two hosts."""
    from oslo_config import cfg
    from oslo_messaging import opts
    nodes = cluster.Cluster().start()
    for group, options in opts.list_opts():
        if group == 'oslo_messaging_rabbit':
            cfg.CONF.register_opts(options, group=group)
    for name, value in cluster.RABBIT_OPTIONS.items():
        cfg.CONF.set_override(name, value, group='oslo_messaging_rabbit')
    client = cluster.ClusterClient(topic, nodes.url)
    workers = []
    for host in ('soak-a', 'soak-b'):
        config = cluster.write_config(
            os.path.join(scratch, '%s.conf' % host), database, topic, host,
            nodes.url, workers=processes)
        if not workers:
            services.manage(config, 'db', 'sync')
        workers.append(services.Worker(config).start(client))
    return nodes, client, workers


if __name__ == '__main__':
    sys.exit(main())
