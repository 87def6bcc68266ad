"""Claims whose request filters the cloud (traits, aggregates, a named
tree), beside single allocates that name the host, in the same run.

    .venv/bin/python -m benchmarks.claims_filtered --trees 10000
        [--backend postgresql] [--workers 2] [--seconds 10] [--window 1]
        [--out benchmarks/results/claims_filtered.json]

The cloud: ``--trees`` flat compute roots (no children), each with VCPU,
MEMORY_MB and DISK_GB, bulk-loaded into a fresh database
(``candidates_cloud.BulkLoader``); 1% of them in one aggregate (the
zone), another 1% with the trait CUSTOM_RARE, another 2% with
COMPUTE_STATUS_DISABLED, picked at random. ``allocworker-worker``
(``--workers`` processes) serves it.

Each row is one request shape, a claim of VCPU 1, MEMORY_MB 256, DISK_GB
1 (strategy spread, a new consumer each) with its filter: ``plain``,
``not_disabled`` (Nova's default ``required: ['!COMPUTE_STATUS_DISABLED']``),
``member_of`` (the zone), ``required_rare``, ``root_required_rare`` and
``in_tree`` (a random root named per call), all at c=1, then
``member_of`` at c=16. Beside it, in the same run, single ``allocate``
calls of the same amounts naming a random root: the two alternate in
windows of ``--window`` s (claim, allocate, allocate, claim, ...), each
for ``--seconds`` in all, so a change in the machine's load falls on
both alike. Per call: p50/p99, calls/s, CPU of the worker processes and
of the database (``cpu.Meter``); ``ratio`` is the claim's figure over
the allocate's. Every claim is checked to have landed where its filter
says; non-200 answers, exceptions and such violations are counted per
row and must all be 0 (exit status 1 otherwise).
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
import uuid

import sqlalchemy as sa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from allocworker.db import schema  # noqa: E402
from benchmarks import candidates_cloud  # noqa: E402
from benchmarks import claims  # noqa: E402
from benchmarks import cpu  # noqa: E402
from benchmarks import load  # noqa: E402
from benchmarks import results  # noqa: E402
from tests.functional import services  # noqa: E402

REQUEST = {'VCPU': 1, 'MEMORY_MB': 256, 'DISK_GB': 1}
# Room for every call of a long run on the zone's 1% alone: a host that
# filled up would measure 409s instead of the filter's cost.
INVENTORY = {'VCPU': 10 ** 6, 'MEMORY_MB': 256 * 10 ** 6, 'DISK_GB': 10 ** 6}
ZONE = candidates_cloud.aggregate(0)
RARE = 'CUSTOM_RARE'
DISABLED = 'COMPUTE_STATUS_DISABLED'
OUT = os.path.join('benchmarks', 'results', 'claims_filtered.json')


class Cloud(object):
    """Flat roots (provider id ``n + 1``) and the ones each filter admits;
    the filtered sets are disjoint and scattered at random, so that no
    filter's roots come first in the providers' order."""

    def __init__(self, trees, seed=0):
        self.uuids = [str(uuid.uuid4()) for _ in range(trees)]
        order = random.Random(seed).sample(range(trees), trees)
        share = max(1, trees // 100)
        self.zone = order[:share]
        self.rare = order[share:2 * share]
        self.disabled = order[2 * share:4 * share]

    def uuids_of(self, indexes):
        return frozenset(self.uuids[n] for n in indexes)

    def rows(self):
        """(providers, inventories, members), as ``BulkLoader`` takes them
        (a member's aggregate 0 is ZONE)."""
        providers = [(n + 1, u, 'cn-%d' % n, None, n + 1)
                     for n, u in enumerate(self.uuids)]
        inventories = [(n + 1, rc, total) for n in range(len(self.uuids))
                       for rc, total in INVENTORY.items()]
        return providers, inventories, [(n + 1, 0) for n in self.zone]

    def load(self, url):
        loader = candidates_cloud.BulkLoader(url, placement=False)
        try:
            loader.load(self.rows())
            with loader.engine.begin() as conn:
                self._traits(conn)
        finally:
            loader.close()

    def _traits(self, conn):
        candidates_cloud._insert(conn, schema.traits, [{'name': RARE}])
        t = schema.traits
        ids = dict(conn.execute(sa.select(t.c.name, t.c.id).where(
            t.c.name.in_([RARE, DISABLED]))).all())
        candidates_cloud._insert(conn, schema.provider_traits, [
            {'provider_id': n + 1, 'trait_id': ids[name]}
            for name, held in ((RARE, self.rare), (DISABLED, self.disabled))
            for n in held])
        if conn.dialect.name == 'postgresql':
            conn.exec_driver_sql('ANALYZE')  # the traits came after load's


def check_cloud(rpc, cloud):
    """The worker sees the filtered sets the claims are judged by (a
    check that always passes on a wrong cloud would mean nothing)."""
    for group, indexes in (({'member_of': [ZONE]}, cloud.zone),
                           ({'required': [RARE]}, cloud.rare),
                           ({'required': [DISABLED]}, cloud.disabled)):
        answer = rpc.get_allocation_candidates(request={'groups': [
            dict(group, resources=dict(REQUEST))]}, limit=len(indexes) + 1)
        found = {item['root_uuid'] for item in answer['items']}
        if found != cloud.uuids_of(indexes):
            raise AssertionError('%s admits %d roots, not the %d loaded'
                                 % (group, len(found), len(indexes)))


def shapes(cloud):
    """(row name, its filters as the row shows them, the roots it admits,
    make) per request shape; ``make()`` is a request and the test its
    claim's root must pass."""
    def fixed(group=(), top=(), admitted=None):
        request = dict({'groups': [dict(group, resources=dict(REQUEST))]},
                       **dict(top))
        admits = admitted.__contains__ if admitted is not None else None
        return (dict(group, **dict(top)),
                len(cloud.uuids) if admitted is None else len(admitted),
                lambda: (request, admits))

    def in_tree():
        root = random.choice(cloud.uuids)
        return ({'groups': [{'resources': dict(REQUEST), 'in_tree': root}]},
                root.__eq__)

    enabled = frozenset(cloud.uuids) - cloud.uuids_of(cloud.disabled)
    rare = cloud.uuids_of(cloud.rare)
    return [
        ('plain',) + fixed(),
        ('not_disabled',) + fixed({'required': ['!' + DISABLED]},
                                  admitted=enabled),
        ('member_of',) + fixed({'member_of': [ZONE]},
                               admitted=cloud.uuids_of(cloud.zone)),
        ('required_rare',) + fixed({'required': [RARE]}, admitted=rare),
        ('root_required_rare',) + fixed(top={'root_required': [RARE]},
                                        admitted=rare),
        ('in_tree', {'in_tree': '<a random root per call>'}, 1, in_tree),
    ]


class Tally(object):
    """What one kind of call of a row answered: items not 200 (by code)
    and claims that landed where their filter does not admit."""

    def __init__(self):
        self.lock = threading.Lock()
        self.codes = collections.Counter()
        self.violations = 0
        self.example = None

    def count(self, answer, admits=None):
        item = answer['items'][0]
        if item['status'] != 200:
            with self.lock:
                self.codes[item.get('code') or item['status']] += 1
                self.example = self.example or str(item)[:300]
            return
        if admits is None:
            return
        root = item['root_uuid']
        # Flat roots: the whole claim is on the root it chose.
        if not admits(root) or set(item['allocations']) != {root}:
            with self.lock:
                self.violations += 1
                self.example = self.example or str(item)[:300]


def calls(rpc, cloud, make):
    """{kind: (call, tally)}: a claim of ``make``'s request, and an
    allocate of the same amounts naming a random root."""
    tallies = {'claim': Tally(), 'allocate': Tally()}

    def claim():
        request, admits = make()
        tallies['claim'].count(rpc.claim(items=[claims.new_consumer_item(
            str(uuid.uuid4()), request=request, strategy='spread')]),
            admits)

    def allocate():
        root = random.choice(cloud.uuids)
        tallies['allocate'].count(rpc.allocate(items=[
            claims.new_consumer_item(str(uuid.uuid4()),
                                     allocations={root: dict(REQUEST)})]))

    return {'claim': (claim, tallies['claim']),
            'allocate': (allocate, tallies['allocate'])}


def in_turns(meter, made, concurrency, seconds, window):
    """Each call of ``made`` for ``seconds`` at ``concurrency``, in
    alternating windows (A B B A A B ...): {kind: figures}."""
    kinds = list(made)
    turns = max(1, round(seconds / window))
    taken = {kind: {'latencies': [], 'errors': [], 'elapsed': 0.0,
                    'servers': 0.0, 'database': 0.0} for kind in kinds}
    for turn in range(turns):
        for kind in kinds if turn % 2 == 0 else kinds[::-1]:
            before = meter.snapshot()
            latencies, errors, elapsed = load.load(
                made[kind][0], concurrency, seconds / turns)
            spent = meter.spent(before, meter.snapshot())
            into = taken[kind]
            into['latencies'] += latencies
            into['errors'] += errors
            into['elapsed'] += elapsed
            into['servers'] += spent['servers']
            into['database'] += spent['database']
    return {kind: figures(taken[kind], made[kind][1]) for kind in kinds}


def figures(taken, tally):
    latencies, count = taken['latencies'], len(taken['latencies'])

    def ms(seconds, per=1):
        return round(1000 * seconds / per, 2) if count else None
    return {
        'calls': count,
        'per_s': round(count / taken['elapsed'], 1),
        'p50_ms': ms(load.percentile(latencies, 0.5)) if count else None,
        'p99_ms': ms(load.percentile(latencies, 0.99)) if count else None,
        # CPU per call: the worker processes' (every descendant of this
        # process) and the run's database backends'.
        'worker_cpu_ms': ms(taken['servers'], count),
        'db_cpu_ms': ms(taken['database'], count),
        'non_200': sum(tally.codes.values()), 'codes': dict(tally.codes),
        'violations': tally.violations, 'errors': len(taken['errors']),
        'example': tally.example or (taken['errors'] or [None])[0],
    }


def ratios(claim, allocate):
    """The claim's figures over the allocate's (None where either is)."""
    def over(field):
        a, b = claim[field], allocate[field]
        return round(a / b, 2) if a is not None and b else None
    return {field: over(field) for field in (
        'p50_ms', 'p99_ms', 'per_s', 'worker_cpu_ms', 'db_cpu_ms')}


def measure(rpc, meter, cloud, args):
    """Every row, printed as it is measured."""
    listed = shapes(cloud)
    warm = calls(rpc, cloud, listed[0][3])
    # Connections, caches and plans of both worker processes first.
    in_turns(meter, warm, 4, min(2.0, 2 * args.seconds), args.window)
    print(HEADER, flush=True)
    planned = [(shape, 1) for shape in listed] + [
        (next(s for s in listed if s[0] == 'member_of'), 16)]
    rows = []
    for (name, filters, admitted, make), concurrency in planned:
        taken = in_turns(meter, calls(rpc, cloud, make), concurrency,
                         args.seconds, args.window)
        rows.append({
            'row': name, 'concurrency': concurrency, 'filters': filters,
            'admitted_roots': admitted, 'trees': args.trees,
            'backend': args.backend, 'workers': args.workers,
            'claim': taken['claim'], 'allocate': taken['allocate'],
            'ratio': ratios(taken['claim'], taken['allocate'])})
        print(line(rows[-1]), flush=True)
    return rows


HEADER = ('%-19s %3s %9s %9s %9s %6s %8s %8s %6s %14s %14s %s' % (
    'row', 'c', 'claim p50', 'claim p99', 'alloc p50', 'ratio',
    'claim/s', 'alloc/s', 'ratio', 'claim cpu w+db', 'alloc cpu w+db',
    'bad'))


def _f(value):
    return '-' if value is None else '%.1f' % value


def line(row):
    """One row of the printed table (ms, calls/s, CPU ms per call)."""
    claim, allocate, ratio = row['claim'], row['allocate'], row['ratio']
    bad = sum(f[k] for f in (claim, allocate)
              for k in ('non_200', 'violations', 'errors'))

    def cpu_ms(f):
        return '%s+%s' % (_f(f['worker_cpu_ms']), _f(f['db_cpu_ms']))
    return ('%-19s %3d %9s %9s %9s %6s %8s %8s %6s %14s %14s %d%s' % (
        row['row'], row['concurrency'], _f(claim['p50_ms']),
        _f(claim['p99_ms']), _f(allocate['p50_ms']), ratio['p50_ms'],
        _f(claim['per_s']), _f(allocate['per_s']), ratio['per_s'],
        cpu_ms(claim), cpu_ms(allocate), bad, '  e.g. %s' % (
            claim['example'] or allocate['example']) if bad else ''))


def run(args):
    """The rows, measured on a fresh database dropped afterwards."""
    with tempfile.TemporaryDirectory(prefix='aw-bench-filtered-') as scratch:
        with services.fresh_database(args.backend, scratch) as url:
            return _serve(args, Cloud(args.trees), url, scratch)


def _serve(args, cloud, url, scratch):
    with served(args, url, scratch, cloud.load) as (rpc, meter):
        check_cloud(rpc, cloud)
        return measure(rpc, meter, cloud, args)


@contextlib.contextmanager
def served(args, url, scratch, load):
    """``allocworker-worker`` (``args.workers`` processes) on the fresh
    database ``url``, synced and filled by ``load(url)`` before it
    starts (it sees the whole cloud at once): (a client, a CPU meter of
    its processes and the database)."""
    topic = 'aw-bench-%s' % uuid.uuid4().hex[:8]
    config = services.write_config(
        os.path.join(scratch, 'worker.conf'), url, topic,
        workers=args.workers, extra='[database]\nmax_overflow = 10\n')
    services.manage(config, 'db', 'sync')
    started = time.monotonic()
    load(url)
    print('# loaded %d roots in %.1f s'
          % (args.trees, time.monotonic() - started), file=sys.stderr)
    rpc = services.BareClient(topic, timeout=120)
    worker = services.Worker(config).start(rpc)
    try:
        yield rpc, cpu.Meter([url.rsplit('/', 1)[1].split('?')[0]])
    finally:
        worker.stop()
        services.close_clients()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trees', type=int, default=10000)
    parser.add_argument('--backend', default='postgresql',
                        choices=services.BACKENDS)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--seconds', type=float, default=10,
                        help='per kind of call (claim, allocate) and row')
    parser.add_argument('--window', type=float, default=1.0,
                        help='seconds of one kind before the other')
    parser.add_argument('--out', default=OUT, help='the JSON result file')
    args = parser.parse_args(argv)
    record = results.Record('claims_filtered', argv)
    rows = run(args)
    record.write(args.out, rows)
    print('# rows in %s' % args.out)
    bad = [r['row'] for r in rows for kind in ('claim', 'allocate')
           for k in ('non_200', 'violations', 'errors') if r[kind][k]]
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
