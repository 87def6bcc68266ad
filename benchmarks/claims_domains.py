"""Claims into groups with failure-domain rules (RPC 1.5), beside plain
claims and allocates in the same run.

    .venv/bin/python -m benchmarks.claims_domains --trees 10000
        [--backend postgresql] [--workers 2] [--seconds 10] [--window 1]
        [--out benchmarks/results/claims_domains.json]

The cloud: ``--trees`` flat compute roots bulk-loaded into a fresh
database, in 100 racks and 10 zones (an aggregate each, roots dealt out
in turn), mapped to domains by topology levels ``rack`` and ``zone``;
``allocworker-worker`` (``--workers`` processes) serves it. Every group
has the rules ``[anti-affinity per root, spread per rack with max_skew
1]``; a group takes at most ``--group-size`` members (100) before the
next one is made, as a service's instances would.

Rows:
- ``grouped`` (c=1): a claim joining a group, beside a plain claim of the
  same request, in alternating windows: ``ratio`` is grouped over plain.
- ``grouped`` (c=16): claims into 16 groups at once beside single
  allocates naming a random root at c=16: ``ratio`` of calls/s.
- ``storm``: 64 concurrent claims into one new group; the group's rules
  as get_groups reports them afterwards (``broken`` must be 0).
- ``get_groups``: one group of 1,000 members (placed by allocates that
  keep its rules), read 50 times: p50 and p99.
Non-200 answers and broken rules are counted and must be 0 (exit 1).
"""

import argparse
import collections
import os
import random
import sys
import tempfile
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import candidates_cloud  # noqa: E402
from benchmarks import claims  # noqa: E402
from benchmarks import claims_filtered as filtered  # noqa: E402
from benchmarks import load  # noqa: E402
from benchmarks import results  # noqa: E402
from tests.functional import services  # noqa: E402

RACKS, ZONES = 100, 10
REQUEST = {'groups': [{'resources': dict(filtered.REQUEST)}]}
RULES = [{'policy': 'anti-affinity'},
         {'policy': 'spread', 'scope': 'rack', 'max_skew': 1}]
OUT = os.path.join('benchmarks', 'results', 'claims_domains.json')


class Cloud(filtered.Cloud):
    """Flat roots; root n in rack n % 100 and zone n % 10."""

    def rows(self):
        providers, inventories, _zone = super().rows()
        members = [(n + 1, n % RACKS) for n in range(len(self.uuids))] + [
            (n + 1, RACKS + n % ZONES) for n in range(len(self.uuids))]
        return providers, inventories, members

    def levels(self, rpc):
        for name, first, count in (('rack', 0, RACKS),
                                   ('zone', RACKS, ZONES)):
            answer = rpc.set_topology_level(name=name, domains={
                candidates_cloud.aggregate(first + n): '%s-%d' % (name, n)
                for n in range(count)})
            assert answer['status'] == 200, answer


class Groups(object):
    """Groups of the benchmark's rules, a new one once a group is full."""

    def __init__(self, rpc, size):
        self.rpc, self.size = rpc, size
        self.lock = threading.Lock()
        self.current, self.taken = None, size

    def make(self):
        group_uuid = str(uuid.uuid4())
        answer = self.rpc.create_group(uuid=group_uuid, name='bench',
                                       rules=RULES)
        assert answer['status'] == 200, answer
        return group_uuid

    def next(self):
        with self.lock:
            if self.taken >= self.size:
                self.current, self.taken = self.make(), 0
            self.taken += 1
            return self.current


def claim_call(rpc, tally, group_of=None):
    def call():
        item = claims.new_consumer_item(str(uuid.uuid4()), request=REQUEST,
                                        strategy='spread')
        if group_of is not None:
            item['group_uuid'] = group_of()
        tally.count(rpc.claim(items=[item]))
    return call


def allocate_call(rpc, cloud, tally):
    def call():
        root = random.choice(cloud.uuids)
        tally.count(rpc.allocate(items=[claims.new_consumer_item(
            str(uuid.uuid4()), allocations={root: dict(filtered.REQUEST)})]))
    return call


def _row(name, concurrency, taken, first, second, args):
    return {'row': name, 'concurrency': concurrency, 'trees': args.trees,
            'backend': args.backend, 'workers': args.workers,
            'compared_with': second, first: taken[first],
            second: taken[second],
            'ratio': filtered.ratios(taken[first], taken[second])}


def measure_claims(rpc, meter, cloud, args):
    groups = Groups(rpc, args.group_size)
    grouped, plain, alloc = (filtered.Tally() for _ in range(3))
    made = {'grouped': (claim_call(rpc, grouped, groups.next), grouped),
            'plain': (claim_call(rpc, plain), plain)}
    filtered.in_turns(meter, made, 4, 2.0, args.window)   # warm
    rows = [_row('grouped', 1, filtered.in_turns(
        meter, made, 1, args.seconds, args.window), 'grouped', 'plain',
        args)]
    sixteen = [Groups(rpc, args.group_size) for _ in range(16)]
    made = {'grouped': (claim_call(rpc, grouped,
                                   lambda: random.choice(sixteen).next()),
                        grouped),
            'allocate': (allocate_call(rpc, cloud, alloc), alloc)}
    rows.append(_row('grouped', 16, filtered.in_turns(
        meter, made, 16, args.seconds, args.window), 'grouped', 'allocate',
        args))
    return rows


def storm(rpc, args):
    group_uuid = Groups(rpc, 64).make()
    tally = filtered.Tally()
    call = claim_call(rpc, tally, lambda: group_uuid)
    threads = [threading.Thread(target=call) for _ in range(64)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    group = rpc.get_groups(uuids=[group_uuid])['items'][0]
    return {'row': 'storm', 'concurrency': 64, 'trees': args.trees,
            'backend': args.backend, 'workers': args.workers,
            'claims': 64, 'seconds': round(elapsed, 2),
            'non_200': sum(tally.codes.values()), 'codes': dict(tally.codes),
            'members': len(group['members']),
            'broken': sum(not d['satisfied'] for d in group['domains']),
            'skew': group['domains'][1]['skew']}


def big_group(rpc, cloud, args, members=1000):
    """A group of ``members`` members on distinct roots, as many per rack
    (allocates of 100 items), then get_groups timed."""
    group_uuid = Groups(rpc, members).make()
    roots = cloud.uuids[:members]
    for start in range(0, members, 100):
        answer = rpc.allocate(items=[claims.new_consumer_item(
            str(uuid.uuid4()), allocations={r: dict(filtered.REQUEST)},
            group_uuid=group_uuid) for r in roots[start:start + 100]])
        assert answer['status'] == 200, str(answer)[:300]
    latencies = []
    for _ in range(50):
        started = time.monotonic()
        answer = rpc.get_groups(uuids=[group_uuid])
        latencies.append(time.monotonic() - started)
    item = answer['items'][0]
    return {'row': 'get_groups', 'members': len(item['members']),
            'trees': args.trees, 'backend': args.backend,
            'calls': len(latencies),
            'p50_ms': round(1000 * load.percentile(latencies, 0.5), 2),
            'p99_ms': round(1000 * load.percentile(latencies, 0.99), 2),
            'broken': sum(not d['satisfied'] for d in item['domains'])}


def run(args):
    with tempfile.TemporaryDirectory(prefix='aw-bench-domains-') as scratch:
        with services.fresh_database(args.backend, scratch) as url:
            return _serve(args, Cloud(args.trees), url, scratch)


def _serve(args, cloud, url, scratch):
    with filtered.served(args, url, scratch, cloud.load) as (rpc, meter):
        cloud.levels(rpc)
        rows = measure_claims(rpc, meter, cloud, args)
        rows.append(storm(rpc, args))
        rows.append(big_group(rpc, cloud, args))
        for row in rows:
            print(row, flush=True)
        return rows


def bad(rows):
    found = collections.Counter()
    for row in rows:
        for kind in ('grouped', 'plain', 'allocate'):
            if kind in row:
                found[row['row']] += sum(row[kind][k] for k in (
                    'non_200', 'violations', 'errors'))
        found[row['row']] += row.get('broken', 0) + row.get('non_200', 0)
    return {name: n for name, n in found.items() if n}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trees', type=int, default=10000)
    parser.add_argument('--backend', default='postgresql',
                        choices=services.BACKENDS)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--seconds', type=float, default=10)
    parser.add_argument('--window', type=float, default=1.0)
    parser.add_argument('--group-size', type=int, default=100)
    parser.add_argument('--out', default=OUT)
    args = parser.parse_args(argv)
    record = results.Record('claims_domains', argv)
    rows = run(args)
    record.write(args.out, rows)
    print('# rows in %s; bad: %s' % (args.out, bad(rows) or 'none'))
    return 1 if bad(rows) else 0


if __name__ == '__main__':
    sys.exit(main())
