"""A boot storm on a cloud of thousands of hosts: allocworker's ``claim``
against Nova's flow on Placement 16, in the same run (issue 25).

    .venv/bin/python -m benchmarks.claims_storm [--trees 10000]
        [--boots 200] [--concurrency 16] [--backend postgresql]
        [--workers 2] [--no-placement]

Both servers get ``candidates_cloud``'s cloud, bulk-loaded into fresh
databases. ``--boots`` new instances (VCPU, MEMORY_MB and a sharing
DISK_GB) are placed from ``--concurrency`` threads:

- by ``claim`` (spread), one call per instance, over RPC to
  ``allocworker-worker``;
- by Nova's flow on Placement (under uWSGI, ``peers``): ``GET
  /allocation_candidates`` with ``limit=1000``, the candidate with the
  most free memory (Nova's default RAM weigher), ``PUT /allocations``,
  and on a 409 the same again.

Each row: boots/s, p50/p99 seconds per boot, conflicts (409s retried),
errors (anything else: a 500 fails the storm), and the spread: how many
hosts took the boots against an even spread (one boot per host while
there are more hosts than boots), and the most boots one host took.
"""

import argparse
import collections
from concurrent import futures
import json
import os
import sys
import tempfile
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import candidates_cloud as cloud  # noqa: E402
from benchmarks import claims  # noqa: E402
from benchmarks import load  # noqa: E402
from benchmarks import peers  # noqa: E402
from tests.functional import services  # noqa: E402

REQUEST = {'VCPU': 1, 'MEMORY_MB': 256, 'DISK_GB': 1}


class Outcomes(object):
    def __init__(self):
        self.lock = threading.Lock()
        self.roots = collections.Counter()
        self.latencies, self.errors = [], []
        self.conflicts = 0

    def placed(self, root, started):
        with self.lock:
            self.roots[root] += 1
            self.latencies.append(time.monotonic() - started)

    def conflict(self):
        with self.lock:
            self.conflicts += 1

    def error(self, what):
        with self.lock:
            self.errors.append(what)


def by_claims(rpc):
    request = {'groups': [{'resources': dict(REQUEST)}]}

    def boot(outcomes):
        started = time.monotonic()
        item = rpc.claim(items=[claims.new_consumer_item(
            str(uuid.uuid4()), request=request)])['items'][0]
        if item['status'] == 200:
            outcomes.placed(item['root_uuid'], started)
        else:
            outcomes.error('%s %s' % (item['status'], item.get('code')))
    return boot


def by_nova_flow(peer, attempts=50):
    query = ('/allocation_candidates?resources=%s&limit=1000' % ','.join(
        '%s:%d' % kv for kv in sorted(REQUEST.items())))

    def free_memory(candidate, summaries):
        return sum(summaries[p]['resources']['MEMORY_MB']['capacity'] -
                   summaries[p]['resources']['MEMORY_MB']['used']
                   for p, a in candidate['allocations'].items()
                   if 'MEMORY_MB' in a['resources'])

    def boot(outcomes):
        started, consumer = time.monotonic(), str(uuid.uuid4())
        for _ in range(attempts):
            _, found = peer.call('GET', query)
            if not found['allocation_requests']:
                return outcomes.error('no candidates')
            summaries = found['provider_summaries']
            best = max(found['allocation_requests'],
                       key=lambda c: free_memory(c, summaries))
            status, _body = peer.call(
                'PUT', '/allocations/%s' % consumer, dict(
                    best, project_id='bench', user_id='bench',
                    consumer_generation=None), expect=(204, 409))
            if status == 204:
                root = summaries[next(iter(best['allocations']))].get(
                    'root_provider_uuid')
                return outcomes.placed(root, started)
            outcomes.conflict()
        outcomes.error('gave up after %d conflicts' % attempts)
    return boot


def storm(name, boot, boots, concurrency, trees):
    outcomes = Outcomes()
    started = time.monotonic()
    with futures.ThreadPoolExecutor(concurrency) as pool:
        for done in [pool.submit(boot, outcomes) for _ in range(boots)]:
            try:
                done.result()
            except Exception as error:  # a failed boot, counted
                outcomes.error(repr(error)[:200])
    wall = time.monotonic() - started
    placed = sum(outcomes.roots.values())
    even = min(placed, trees)
    return {'row': name, 'trees': trees, 'boots': boots,
            'concurrency': concurrency, 'placed': placed,
            'boots_per_s': round(placed / wall, 2),
            'p50_s': round(load.percentile(outcomes.latencies, 0.5), 3),
            'p99_s': round(load.percentile(outcomes.latencies, 0.99), 3),
            'conflicts': outcomes.conflicts,
            'errors': collections.Counter(outcomes.errors),
            'hosts_used': len(outcomes.roots),
            'spread_vs_even': round(len(outcomes.roots) / even, 3)
            if even else None,
            'most_on_one_host': max(outcomes.roots.values(), default=0)}


def _loaded(url, trees, placement):
    loader = cloud.BulkLoader(url, placement)
    loader.load(cloud.sharing_rows(), sharing=True)
    for first in range(0, trees, 20000):
        loader.load(cloud.tree_rows(first, min(trees, first + 20000)))
    loader.close()


def run(args):
    scratch = tempfile.mkdtemp(prefix='aw-bench-storm-')
    topic = 'aw-bench-%s' % uuid.uuid4().hex[:8]
    rows = []
    with services.fresh_database(args.backend, scratch) as url:
        config = services.write_config(
            os.path.join(scratch, 'worker.conf'), url, topic,
            workers=args.workers, extra='[database]\nmax_overflow = 10\n')
        services.manage(config, 'db', 'sync')
        _loaded(url, args.trees, placement=False)
        rpc = services.BareClient(topic, timeout=120)
        worker = services.Worker(config).start(rpc)
        try:
            rows.append(storm('claim', by_claims(rpc), args.boots,
                              args.concurrency, args.trees))
        finally:
            worker.stop()
    if not args.no_placement:
        folder = os.path.join(scratch, 'placement')
        os.makedirs(folder)
        with services.fresh_database(args.backend, folder) as url:
            server = peers.start_placement(url, folder)
            try:
                _loaded(url, args.trees, placement=True)
                peer = peers.HttpPeer(server, version=cloud.VERSION)
                rows.append(storm('nova flow on placement',
                                  by_nova_flow(peer), args.boots,
                                  args.concurrency, args.trees))
            finally:
                server.stop()
    if len(rows) == 2:
        rows[0]['ratio_boots_per_s'] = round(
            rows[0]['boots_per_s'] / rows[1]['boots_per_s'], 2)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trees', type=int, default=10000)
    parser.add_argument('--boots', type=int, default=200)
    parser.add_argument('--concurrency', type=int, default=16)
    parser.add_argument('--backend', default='postgresql',
                        choices=services.BACKENDS)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--no-placement', action='store_true')
    args = parser.parse_args(argv)
    for row in run(args):
        print(json.dumps(row), flush=True)


if __name__ == '__main__':
    main()
