"""Nova's request mix on a cloud whose hosts differ: ``claim`` beside
Nova's flow on tuned Placement 16, in the same run (issue 36, item 3).

    .venv/bin/python -m benchmarks.nova_mix [--trees 10000] [--seconds 20]
        [--window 5] [--concurrency 16] [--workers 2] [--no-placement]
        [--out benchmarks/results/nova_mix.json]

The cloud: flat roots (VCPU, MEMORY_MB, DISK_GB; three sizes) in four
zones (aggregates) of 50/30/15/5% of the hosts; in each zone 3% carry
CUSTOM_GPU, 2% COMPUTE_STATUS_DISABLED, 10% are full (disjoint, at
random), bulk-loaded into two fresh PostgreSQL databases and the full
ones filled through each side's own API. A boot always has ``required:
['!COMPUTE_STATUS_DISABLED']``; half name a zone (``member_of``, in
proportion to size), a tenth require CUSTOM_GPU (a GPU flavor), a
hundredth name a host that can take it (``in_tree``, an ``az:host``).
Each side boots from ``--concurrency`` threads for ``--seconds``, in
alternating windows (A B B A ...) after an uncounted warm-up each:
``allocworker`` by ``claim`` over RPC (1.3, spread); ``placement`` by
Nova's flow on Placement 16 under uWSGI (a process per core), tuned
(``placement_server.TUNING``): ``GET /allocation_candidates?limit=1000``
(1.39), the candidates in the order of Nova's default RAM weigher,
``PUT /allocations/{consumer}`` (1.36) of the first, the next on a 409,
up to 3 retries.

Per side: boots/s (ratio: allocworker's over Placement's), p50/p99 s,
conflicts (409s retried), failed boots by reason, errors (exceptions),
misplaced boots (on a host the filters do not admit), CPU per boot of
the servers and the database, the tuning beside them. Exit status 1
when a boot was misplaced or raised.
"""

import argparse
import collections
import contextlib
import os
import random
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import candidates_cloud  # noqa: E402
from benchmarks import claims  # noqa: E402
from benchmarks import cpu  # noqa: E402
from benchmarks import load  # noqa: E402
from benchmarks import peers  # noqa: E402
from benchmarks import placement_server  # noqa: E402
from benchmarks import results  # noqa: E402
from tests.functional import services  # noqa: E402

from benchmarks.nova_cloud import (  # noqa: E402
    DISABLED, FLAVORS, GPU, LIMIT, OUT, RETRIES, Cloud, load_cloud)


class Tally(object):
    """What one side's boots came to, from all its threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.placed = self.conflicts = self.misplaced = 0
        self.failed, self.shapes = collections.Counter(), \
            collections.Counter()
        self.example = None
        self.latencies, self.errors = [], []
        self.elapsed = self.servers = self.database = 0.0

    def boot(self, shapes, outcome, providers, conflicts, admits):
        with self.lock:
            self.shapes.update(shapes + ['all'])
            self.conflicts += conflicts
            if outcome != 'placed':
                self.failed[outcome] += 1
            else:
                self.placed += 1
                # Flat roots: a boot's whole allocation is on its host.
                if len(providers) == 1 and admits(next(iter(providers))):
                    return
                self.misplaced += 1
                outcome = 'misplaced on %s' % sorted(providers)
            self.example = self.example or outcome


class Side(object):
    """One side's boots: ``call`` is one boot of the mix, drawn anew."""

    def __init__(self, cloud, url):
        self.cloud, self.tally = cloud, Tally()
        self.database = url.rsplit('/', 1)[1].split('?')[0]  # cpu.Meter's

    def call(self):
        group, admits, shapes = self.cloud.draw(random)
        self.tally.boot(shapes, *self.boot(group), admits=admits)

    def check(self):
        """The side sees the cloud the boots are judged by (a check that
        passes on a wrong cloud would mean nothing)."""
        cloud, small = self.cloud, dict(FLAVORS[0])
        for group, expected in (
                ({'required': [GPU]}, cloud.gpu),
                ({'required': [DISABLED]}, cloud.disabled),
                ({'member_of': [candidates_cloud.aggregate(3)],
                  'required': ['!' + DISABLED]},
                 cloud.zones[3] - cloud.disabled - cloud.full)) + tuple(
                    ({'in_tree': host}, set())
                    for host in sorted(cloud.full)[:3]):
            found = self.roots(dict(group, resources=small))
            if found != expected:
                raise AssertionError('%s: %s admits %d roots, not %d' % (
                    self.name, group, len(found), len(expected)))


class Claims(Side):
    name = 'allocworker'

    def __init__(self, cloud, url, rpc, workers):
        super(Claims, self).__init__(cloud, url)
        self.rpc = rpc
        self.how = 'claim over RPC (1.3), strategy spread'
        self.tuning = {'worker processes': workers, 'strategy': 'spread',
                       '[database] max_overflow': 10,
                       '[scheduling]': 'defaults'}

    def boot(self, group):
        item = self.rpc.claim(items=[claims.new_consumer_item(
            str(uuid.uuid4()), request={'groups': [group]},
            strategy='spread')])['items'][0]
        if item['status'] != 200:
            return '%s %s' % (item['status'], item.get('code')), None, 0
        return 'placed', set(item['allocations']), 0

    def roots(self, group):
        answer = self.rpc.get_allocation_candidates(
            request={'groups': [group]}, limit=LIMIT)
        return {item['root_uuid'] for item in answer['items']}

    def fill(self):
        items = [claims.new_consumer_item(str(uuid.uuid4()), allocations={
            u: self.cloud.size(u)}) for u in sorted(self.cloud.full)]
        for first in range(0, len(items), 500):
            answer = self.rpc.allocate(items=items[first:first + 500])
            bad = [i for i in answer['items'] if i['status'] != 200]
            if bad:
                raise AssertionError('filling full hosts: %s' % bad[0])


def placement_query(group):
    """Nova's ``GET /allocation_candidates`` for one request group."""
    params = [('limit', LIMIT), ('resources', ','.join(
        '%s:%d' % kv for kv in sorted(group['resources'].items())))]
    params += [('required', t) for t in group.get('required', ())]
    params += [('member_of', a) for a in group.get('member_of', ())]
    if group.get('in_tree'):
        params.append(('in_tree', group['in_tree']))
    return '/allocation_candidates?' + urllib.parse.urlencode(params)


class NovaFlow(Side):
    name = 'placement'

    def __init__(self, cloud, url, peer):
        super(NovaFlow, self).__init__(cloud, url)
        self.peer = peer
        self.how = ('Nova: GET /allocation_candidates limit=%d (1.39), '
                    'most free MEMORY_MB first, PUT /allocations (1.36), '
                    'next candidate on 409 (%d retries)' % (LIMIT, RETRIES))
        self.tuning = dict(placement_server.tuning(), **{
            'uwsgi processes': peers.PROCESSES,
            'uwsgi threads': peers.THREADS})

    def candidates(self, group):
        """Allocation requests, as Nova's RAM weigher orders their hosts
        (a stable sort: ties keep Placement's order)."""
        _, found = self.peer.call('GET', placement_query(group),
                                  version='1.39')
        summaries = found['provider_summaries']

        def free_memory(candidate):
            return sum(summaries[p]['resources']['MEMORY_MB']['capacity'] -
                       summaries[p]['resources']['MEMORY_MB']['used']
                       for p in candidate['allocations'])
        return sorted(found['allocation_requests'], key=free_memory,
                      reverse=True)

    def boot(self, group):
        consumer, conflicts = str(uuid.uuid4()), 0
        candidates = self.candidates(group)
        for candidate in candidates[:1 + RETRIES]:
            status, _ = self.peer.call(
                'PUT', '/allocations/%s' % consumer, dict(
                    candidate, project_id='bench', user_id='bench',
                    consumer_generation=None), version='1.36',
                expect=(204, 409))
            if status == 204:
                return 'placed', set(candidate['allocations']), conflicts
            conflicts += 1
        return ('gave up after 409s' if candidates else 'no candidates',
                None, conflicts)

    def roots(self, group):
        return {p for candidate in self.candidates(group)
                for p in candidate['allocations']}

    def fill(self):
        body = {str(uuid.uuid4()): {
            'allocations': {u: {'resources': self.cloud.size(u)}},
            'project_id': 'bench', 'user_id': 'bench',
            'consumer_generation': None} for u in sorted(self.cloud.full)}
        if body:
            self.peer.call('POST', '/allocations', body, version='1.36',
                           expect=(204,))


def fresh_database(stack, scratch, name):
    """(a folder of its own, a fresh PostgreSQL database) for one side."""
    folder = os.path.join(scratch, name)
    os.makedirs(folder)
    return folder, stack.enter_context(
        services.fresh_database('postgresql', folder))


def start_claims(stack, cloud, args, scratch):
    """allocworker-worker on a fresh database holding the cloud."""
    folder, url = fresh_database(stack, scratch, 'allocworker')
    topic = 'aw-bench-%s' % uuid.uuid4().hex[:8]
    config = services.write_config(
        os.path.join(folder, 'worker.conf'), url, topic,
        workers=args.workers, extra='[database]\nmax_overflow = 10\n')
    services.manage(config, 'db', 'sync')
    # Loaded before the worker starts: it sees the whole cloud at once.
    load_cloud(cloud, url, placement=False)
    rpc = services.BareClient(topic, timeout=120)
    stack.callback(services.close_clients)
    stack.callback(services.Worker(config).start(rpc).stop)
    return Claims(cloud, url, rpc, args.workers)


def start_nova_flow(stack, cloud, scratch):
    """Placement 16 under uWSGI on a fresh database holding the cloud."""
    folder, url = fresh_database(stack, scratch, 'placement')
    server = peers.start_placement(url, folder)
    stack.callback(server.stop)
    # After its start: placement-manage made the tables, the application
    # the standard traits.
    load_cloud(cloud, url, placement=True)
    return NovaFlow(cloud, url, peers.HttpPeer(server))


def in_windows(sides, meter, args):
    """Each side for ``--seconds`` in alternating windows, after a
    warm-up window each (connections, caches, plans) not counted."""
    for side in sides:
        load.load(side.call, args.concurrency, min(args.window, 3.0))
        side.tally = Tally()
    turns = max(1, round(args.seconds / args.window))
    for turn in range(turns):
        for side in sides if turn % 2 == 0 else sides[::-1]:
            before = meter.snapshot()
            latencies, errors, elapsed = load.load(
                side.call, args.concurrency, args.seconds / turns)
            spent = meter.spent(before, meter.snapshot())
            tally = side.tally
            tally.latencies += latencies
            tally.errors += errors
            tally.elapsed += elapsed
            tally.servers += spent['servers']
            tally.database += spent['database']


def row(side, cloud, args):
    t = side.tally

    def per_boot(seconds):
        return round(1000 * seconds / t.placed, 1) if t.placed else None

    def percentile(fraction):
        return round(load.percentile(t.latencies, fraction), 3) \
            if t.latencies else None
    return {
        'side': side.name, 'how': side.how, 'tuning': side.tuning,
        'trees': len(cloud.uuids), 'concurrency': args.concurrency,
        'seconds': round(t.elapsed, 1), 'boots': t.placed,
        'boots_per_s': round(t.placed / t.elapsed, 2) if t.elapsed else 0,
        'p50_s': percentile(0.5), 'p99_s': percentile(0.99),
        'conflicts': t.conflicts, 'failed': dict(t.failed),
        'errors': len(t.errors), 'misplaced': t.misplaced,
        'shapes': dict(t.shapes),
        'server_cpu_ms_per_boot': per_boot(t.servers),
        'db_cpu_ms_per_boot': per_boot(t.database),
        'example': t.example or (t.errors or [None])[0],
        'cloud': {'zones': [len(z) for z in cloud.zones],
                  'gpu': len(cloud.gpu), 'disabled': len(cloud.disabled),
                  'full': len(cloud.full)}}


def run(args):
    cloud = Cloud(args.trees)
    with tempfile.TemporaryDirectory(prefix='aw-bench-nova-mix-') as \
            scratch, contextlib.ExitStack() as stack:
        started = time.monotonic()
        sides = [start_claims(stack, cloud, args, scratch)]
        if not args.no_placement:
            sides.append(start_nova_flow(stack, cloud, scratch))
        for side in sides:
            side.fill()
            side.check()
        print('# %d hosts loaded, filled and checked on %d sides in %.0f s'
              % (args.trees, len(sides), time.monotonic() - started),
              file=sys.stderr, flush=True)
        in_windows(sides, cpu.Meter([s.database for s in sides]), args)
        rows = [row(side, cloud, args) for side in sides]
    if len(rows) == 2 and rows[1]['boots_per_s']:
        rows[0]['ratio_boots_per_s'] = round(
            rows[0]['boots_per_s'] / rows[1]['boots_per_s'], 2)
    return rows


def table(rows):
    print('%-11s %8s %6s %6s %6s %6s %9s %6s %6s %9s %13s' % (
        'side', 'boots/s', 'ratio', 'boots', 'p50 s', 'p99 s', 'conflicts',
        'failed', 'errors', 'misplaced', 'cpu ms srv+db'))
    for r in rows:
        print('%-11s %8.2f %6s %6d %6s %6s %9d %6d %6d %9d %13s' % (
            r['side'], r['boots_per_s'], r.get('ratio_boots_per_s', '-'),
            r['boots'], r['p50_s'], r['p99_s'], r['conflicts'],
            sum(r['failed'].values()), r['errors'], r['misplaced'],
            '%s+%s' % (r['server_cpu_ms_per_boot'],
                       r['db_cpu_ms_per_boot'])))
    for r in rows:
        print('# %s: %s; %s%s' % (r['side'], r['how'], ', '.join(
            '%s %s' % kv for kv in r['tuning'].items()),
            '; e.g. %s' % r['example'] if r['example'] else ''))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trees', type=int, default=10000)
    parser.add_argument('--seconds', type=float, default=20)  # per side
    # Seconds of one side before the other.
    parser.add_argument('--window', type=float, default=5)
    parser.add_argument('--concurrency', type=int, default=16)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--no-placement', action='store_true')
    parser.add_argument('--out', default=OUT)
    args = parser.parse_args(argv)
    record = results.Record('nova_mix', argv)
    rows = run(args)
    record.write(args.out, rows)
    table(rows)
    print('# rows in %s' % args.out)
    return 1 if any(r['misplaced'] or r['errors'] for r in rows) else 0


if __name__ == '__main__':
    sys.exit(main())
