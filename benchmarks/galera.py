"""Galera behind HAProxy against the single MariaDB server, in one run.

    .venv/bin/python -m benchmarks.galera [--seconds 10] [--rounds 2]
                                          [--hosts 10] [--json]

Starts the three-node cluster of tools/galera-cluster.sh if it is not
running, and three targets, each a fresh database with its own
``allocworker-worker`` (2 processes) on the default RabbitMQ:

- ``mariadb``: the machine's single MariaDB server (3306);
- ``galera``: the cluster through HAProxy's writer listener (3320): every
  write on one node, the documented default;
- ``galera-multi``: the negative control, the cluster through the readers'
  listener (3321, least connections over all three nodes), so writes are
  spread over every node and meet each other only at certification.

Each round drives every target in turn (single allocates of new
consumers at c=16; 100-item independent batches at c=4) on ``--hosts``
providers, few enough that concurrent writes touch the same provider
rows, as a busy cloud's do. Reported per row: calls or items per second,
p50 and p99, the ratio to the single MariaDB of the same round, the
worker processes' CPU per call or item, errors, and on Galera the
certification failures (each one a transaction the worker ran again) the
nodes counted meanwhile.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import uuid

import sqlalchemy as sa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import cpu  # noqa: E402
from benchmarks.load import drive  # noqa: E402
from tests.functional import services  # noqa: E402

SCRIPT = os.path.join(ROOT, 'tools', 'galera-cluster.sh')
TARGETS = (('mariadb', 'mysql+pymysql://root@127.0.0.1:3306'),
           ('galera', 'mysql+pymysql://root@127.0.0.1:3320'),
           ('galera-multi', 'mysql+pymysql://root@127.0.0.1:3321'))
NODE_URLS = ['mysql+pymysql://root@127.0.0.1:%d' % (3310 + n)
             for n in (1, 2, 3)]
BATCH = 100


def certification_failures():
    """Write sets the three nodes refused at certification or aborted to
    apply a replicated one, summed."""
    total = 0
    for url in NODE_URLS:
        engine = sa.create_engine(url + '/', poolclass=sa.pool.NullPool)
        with engine.connect() as conn:
            for _name, value in conn.exec_driver_sql(
                    "SHOW GLOBAL STATUS WHERE Variable_name IN "
                    "('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')"):
                total += int(value)
        engine.dispose()
    return total


class Target(object):
    """A fresh database on one server and a worker on it."""

    def __init__(self, name, server, scratch, hosts):
        self.name = name
        self.server = server
        self.database = 'aw_bench_%s' % uuid.uuid4().hex[:10]
        admin = sa.create_engine(server + '/', poolclass=sa.pool.NullPool,
                                 isolation_level='AUTOCOMMIT')
        with admin.connect() as conn:
            conn.exec_driver_sql('CREATE DATABASE %s' % self.database)
        admin.dispose()
        topic = 'aw-bench-%s-%s' % (name, uuid.uuid4().hex[:6])
        config = services.write_config(
            os.path.join(scratch, '%s.conf' % name),
            '%s/%s?charset=utf8mb4' % (server, self.database), topic,
            workers=2, extra='[database]\nconnection_recycle_time = 280\n')
        services.manage(config, 'db', 'sync')
        self.client = services.BareClient(topic, timeout=120)
        self.worker = services.Worker(config).start(self.client)
        self.hosts = []
        for n in range(hosts):
            host = str(uuid.uuid4())
            gen = self.client.create_provider(
                uuid=host, name='bench-%d-%s' % (n, host))['items'][0][
                'generation']
            self.client.set_inventories(
                provider_uuid=host, provider_generation=gen,
                inventories={'VCPU': {'total': 2 ** 31 - 1}})
            self.hosts.append(host)

    def item(self):
        return {'consumer_uuid': str(uuid.uuid4()),
                'consumer_generation': None, 'project_id': 'bench',
                'user_id': 'bench',
                'allocations': {random.choice(self.hosts): {'VCPU': 1}}}

    def allocate(self, count):
        answer = self.client.allocate(items=[self.item()
                                             for _ in range(count)])
        bad = [i for i in answer['items'] if i['status'] != 200]
        if bad:
            raise RuntimeError('not all items 200: %s' % bad[0])

    def close(self):
        self.worker.stop()
        admin = sa.create_engine(self.server + '/',
                                 poolclass=sa.pool.NullPool,
                                 isolation_level='AUTOCOMMIT')
        with admin.connect() as conn:
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % self.database)
        admin.dispose()


def measure(target, workload, concurrency, seconds, meter):
    per_call = BATCH if workload == 'allocate x100' else 1
    galera = target.name != 'mariadb'
    failures = certification_failures() if galera else None
    before = meter.snapshot()
    per_s, p50, p99, errors, items = drive(
        lambda: target.allocate(per_call), concurrency, seconds, per_call)
    spent = meter.spent(before, meter.snapshot())
    return {'target': target.name, 'workload': workload,
            'concurrency': concurrency, 'per_s': round(per_s, 1),
            'unit': 'items' if per_call > 1 else 'calls',
            'p50_ms': round(p50, 2), 'p99_ms': round(p99, 2),
            'errors': len(errors), 'first_error': errors[:1],
            'worker_cpu_ms': round(spent['servers'] * 1000 / max(items, 1),
                                   3),
            'certification_failures': (certification_failures() - failures
                                       if galera else None)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seconds', type=float, default=10)
    parser.add_argument('--rounds', type=int, default=2)
    parser.add_argument('--hosts', type=int, default=10)
    parser.add_argument('--json', action='store_true')
    args = parser.parse_args(argv)
    started_here = 'Synced' not in subprocess.run(
        [SCRIPT, 'status'], capture_output=True, text=True).stdout
    subprocess.run([SCRIPT, 'start'], check=True, stdout=subprocess.DEVNULL,
                   timeout=300)
    scratch = tempfile.mkdtemp(prefix='aw-bench-galera-')
    targets = [Target(name, url, scratch, args.hosts)
               for name, url in TARGETS]
    meter = cpu.Meter([t.database for t in targets])
    try:
        for rnd in range(args.rounds):
            for workload, concurrency in (('allocate', 16),
                                          ('allocate x100', 4)):
                rows = [measure(t, workload, concurrency, args.seconds,
                                meter) for t in targets]
                base = rows[0]['per_s']
                for row in rows:
                    row['round'] = rnd + 1
                    row['ratio_to_mariadb'] = round(row['per_s'] / base, 3) \
                        if base else None
                    show(row, args.json)
    finally:
        for t in targets:
            t.close()
        if started_here:
            subprocess.run([SCRIPT, 'stop'], timeout=300)


def show(row, as_json):
    if as_json:
        print(json.dumps(row), flush=True)
        return
    print('round %d %-13s %-13s c=%-2d %8.1f %-5s/s p50 %7.2f p99 %7.2f ms '
          'x%-5s worker cpu %6.3f ms/%s  cert. failures %s  errors %d%s'
          % (row['round'], row['target'], row['workload'],
             row['concurrency'], row['per_s'], row['unit'], row['p50_ms'],
             row['p99_ms'], row['ratio_to_mariadb'], row['worker_cpu_ms'],
             row['unit'][:-1], row['certification_failures'],
             row['errors'], ' %s' % row['first_error'][0][:200]
             if row['errors'] else ''), flush=True)


if __name__ == '__main__':
    main()
