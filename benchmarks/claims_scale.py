"""Claims on a cloud of thousands of hosts, beside single allocates that
name the host, in the same run (issue 25's targets).

    .venv/bin/python -m benchmarks.claims_scale [--trees 1000 10000 100000]
        [--backend postgresql] [--workers 2] [--seconds 10] [--json]

The cloud is ``candidates_cloud``'s (100 sharing DISK_GB providers, trees
of a root and two NUMA children with VCPU and MEMORY_MB), bulk-loaded
into a fresh database and grown between the sizes; one
``allocworker-worker`` serves it. At each size, per row: p50/p99 at c=1,
calls/s at c=16, and CPU per call of the worker's processes and of the
database (``cpu.Meter``). A claim asks for VCPU, MEMORY_MB and DISK_GB
(the disk from a sharing provider); an allocate names a random tree's
NUMA node and its sharing provider. The ``ratio`` fields are the claim's
figure over the allocate's of the same size and run.
"""

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import candidates_cloud as cloud  # noqa: E402
from benchmarks import claims  # noqa: E402
from benchmarks import cpu  # noqa: E402
from benchmarks import load  # noqa: E402
from tests.functional import services  # noqa: E402

REQUEST = {'VCPU': 1, 'MEMORY_MB': 256, 'DISK_GB': 1}


class Hosts(object):
    """What an allocate names: a NUMA node of a tree and the sharing
    provider of its aggregate."""

    def __init__(self, sharing):
        self.sharing = [row[1] for row in sharing[0]]
        self.numa = []

    def grow(self, rows):
        for _id, uuid_, name, _parent, _root in rows[0]:
            if name.endswith('-numa0'):
                tree = int(name.split('-')[1])
                self.numa.append((uuid_,
                                  self.sharing[tree % cloud.SHARING]))

    def allocations(self):
        numa, disk = random.choice(self.numa)
        return {numa: {'VCPU': REQUEST['VCPU'],
                       'MEMORY_MB': REQUEST['MEMORY_MB']},
                disk: {'DISK_GB': REQUEST['DISK_GB']}}


def calls(rpc, hosts):
    request = {'groups': [{'resources': dict(REQUEST)}]}
    return {
        'allocate': lambda: rpc.allocate(items=[claims.new_consumer_item(
            str(uuid.uuid4()), allocations=hosts.allocations())]),
        'claim': lambda: rpc.claim(items=[claims.new_consumer_item(
            str(uuid.uuid4()), request=request)]),
    }


def _timed(call, concurrency, seconds):
    """Latencies (s) of the calls ``concurrency`` threads make in
    ``seconds``, the wall time, and how many failed."""
    stop = time.monotonic() + seconds
    latencies, failed, lock = [], [0], threading.Lock()

    def loop():
        while time.monotonic() < stop:
            started = time.monotonic()
            answer = call()
            took = time.monotonic() - started
            with lock:
                latencies.append(took)
                if answer['items'][0]['status'] != 200:
                    failed[0] += 1

    threads = [threading.Thread(target=loop) for _ in range(concurrency)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, time.monotonic() - started, failed[0]


def measure(rpc, meter, call, concurrency, seconds):
    before = meter.snapshot()
    latencies, wall, failed = _timed(call, concurrency, seconds)
    spent = meter.spent(before, meter.snapshot())
    count = len(latencies)
    return {'per_s': round(count / wall, 1),
            'p50_ms': round(1000 * load.percentile(latencies, 0.5), 2),
            'p99_ms': round(1000 * load.percentile(latencies, 0.99), 2),
            'worker_cpu_ms': round(1000 * spent['servers'] / count, 2),
            'db_cpu_ms': round(1000 * spent['database'] / count, 2),
            'calls': count, 'failed': failed}


def run(args):
    scratch = tempfile.mkdtemp(prefix='aw-bench-claims-scale-')
    topic = 'aw-bench-%s' % uuid.uuid4().hex[:8]
    with services.fresh_database(args.backend, scratch) as url:
        config = services.write_config(
            os.path.join(scratch, 'worker.conf'), url, topic,
            workers=args.workers, extra='[database]\nmax_overflow = 10\n')
        services.manage(config, 'db', 'sync')
        loader = cloud.BulkLoader(url, placement=False)
        sharing = cloud.sharing_rows()
        loader.load(sharing, sharing=True)
        hosts = Hosts(sharing)
        rpc = services.BareClient(topic, timeout=120)
        worker = services.Worker(config).start(rpc)
        meter = cpu.Meter([url.rsplit('/', 1)[1].split('?')[0]])
        loaded = 0
        try:
            for trees in sorted(args.trees):
                rows = cloud.tree_rows(loaded, trees)
                loader.load(rows)
                hosts.grow(rows)
                loaded = trees
                yield from _size(rpc, meter, hosts, trees, args)
        finally:
            worker.stop()
            loader.close()


def _size(rpc, meter, hosts, trees, args):
    made = calls(rpc, hosts)
    for name in made:  # warm both up (connections, caches)
        _timed(made[name], 1, 1)
    figures = {}
    for concurrency in (1, 16):
        for name, call in made.items():
            figures[name, concurrency] = measure(rpc, meter, call,
                                                 concurrency, args.seconds)
    for (name, concurrency), row in figures.items():
        base = figures['allocate', concurrency]
        ratio = None
        if name == 'claim':
            ratio = {'p50': round(row['p50_ms'] / base['p50_ms'], 2),
                     'per_s': round(row['per_s'] / base['per_s'], 2)}
        yield dict(row, row=name, concurrency=concurrency, trees=trees,
                   backend=args.backend, ratio_to_allocate=ratio)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trees', type=int, nargs='+',
                        default=[1000, 10000])
    parser.add_argument('--backend', default='postgresql',
                        choices=services.BACKENDS)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--seconds', type=float, default=10)
    args = parser.parse_args(argv)
    for row in run(args):
        print(json.dumps(row), flush=True)


if __name__ == '__main__':
    main()
