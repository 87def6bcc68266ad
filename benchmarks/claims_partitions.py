"""A bound caller's claims and candidates on a cloud split into
partitions, beside the same calls on a cloud of its partition's size
alone, in the same run (design §3 "Partitions", RPC 1.6).

    .venv/bin/python -m benchmarks.claims_partitions --trees 10000
        [--backend postgresql] [--workers 2] [--seconds 10] [--window 1]
        [--out benchmarks/results/claims_partitions.json]

Two clouds of flat compute roots (``claims_filtered``'s inventory, no
children), each bulk-loaded into a fresh database of its own and served
by an ``allocworker-worker`` of its own (``--workers`` processes, the
same configuration but for the bindings):

- ``split``: ``--trees`` roots dealt into 10 partitions ``p0`` .. ``p9``
  (root n in ``p(n % 10)``), ``[partitions] bindings`` binding
  ``nova-p0`` .. ``nova-p9`` each to its own;
- ``own``: ``--trees / 10`` roots, all in ``p0``, binding ``nova-p0``.

Every call is made as ``nova-p0`` (the RPC context's ``user_id``), so
on both clouds it searches the same number of roots: ``claim_spread``
and ``claim_pack`` (a claim of a new consumer of ``claims_filtered``'s
request, by that strategy) and ``candidates``
(``get_allocation_candidates``, ``limit=1000``), at c=1, then both
claims at c=16. The two clouds alternate in windows of ``--window`` s
(split, own, own, split, ...), ``--seconds`` each in all. Per call:
p50/p99, calls/s, CPU of that side's worker processes and database
backends. Target: the split cloud's p50 within 1.2x the own cloud's
(the partition narrows the window; it is never a filter applied after
it). Every answer is checked: status 200, every claimed or candidate
root in ``p0``, and as many candidates as ``p0`` has roots (up to the
limit); any other answer makes the exit status 1.
"""

import argparse
import collections
import contextlib
import os
import sys
import tempfile
import time
import uuid

import sqlalchemy as sa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from allocworker.db import schema  # noqa: E402
from benchmarks import candidates_cloud  # noqa: E402
from benchmarks import claims  # noqa: E402
from benchmarks import claims_filtered as filtered  # noqa: E402
from benchmarks import cpu  # noqa: E402
from benchmarks import load  # noqa: E402
from benchmarks import results  # noqa: E402
from tests.functional import services  # noqa: E402

PARTITIONS = 10
HOME = 'p0'
USER = 'nova-p0'
LIMIT = 1000
TARGET = 1.2
REQUEST = {'groups': [{'resources': dict(filtered.REQUEST)}]}
SIDES = ('split', 'own')
OUT = os.path.join('benchmarks', 'results', 'claims_partitions.json')


class Cloud(object):
    """Flat roots (provider id ``n + 1``), root n in
    ``partitions[n % len(partitions)]``."""

    def __init__(self, trees, partitions):
        self.partitions = list(partitions)
        self.uuids = [str(uuid.uuid4()) for _ in range(trees)]
        self.partition_of = {
            u: self.partitions[n % len(self.partitions)]
            for n, u in enumerate(self.uuids)}

    def home(self):
        return frozenset(u for u, p in self.partition_of.items()
                         if p == HOME)

    def bindings(self):
        return ','.join('nova-%s:%s' % (p, p) for p in self.partitions)

    def rows(self):
        """(providers, inventories, members): a provider row is
        ``BulkLoader``'s (id, uuid, name, parent id, root id) and its
        partition."""
        providers = [(n + 1, u, 'cn-%d' % n, None, n + 1,
                      self.partition_of[u])
                     for n, u in enumerate(self.uuids)]
        inventories = [(n + 1, rc, total) for n in range(len(self.uuids))
                       for rc, total in filtered.INVENTORY.items()]
        return providers, inventories, []

    def load(self, url):
        loader = Loader(url, placement=False)
        try:
            loader.load(self.rows())
            with loader.engine.connect() as conn:
                counts = dict(conn.execute(sa.select(
                    schema.providers.c.partition, sa.func.count()).group_by(
                        schema.providers.c.partition)).all())
        finally:
            loader.close()
        wanted = collections.Counter(self.partition_of.values())
        if counts != dict(wanted):
            raise AssertionError('loaded %s, not %s' % (counts, wanted))


class Loader(candidates_cloud.BulkLoader):
    """``BulkLoader`` whose provider rows carry a sixth field, the
    partition: the providers go in first (committed), then the rest of
    the cloud as ``BulkLoader`` writes it."""

    def load(self, rows, sharing=False):
        providers, inventories, members = rows
        with self.engine.begin() as conn:
            candidates_cloud._insert(conn, self.providers, [
                {'id': i, 'uuid': u, 'name': n, 'generation': 1,
                 'parent_provider_id': p, 'root_provider_id': r,
                 'partition': partition}
                for i, u, n, p, r, partition in providers])
        super().load(([], inventories, members), sharing)


class SideMeter(cpu.Meter):
    """``cpu.Meter`` of one side: its worker processes (not the other
    side's, also descended from this process) and its database."""

    def __init__(self, database, worker_pid):
        super().__init__([database])
        self.worker_pid = worker_pid

    def _part(self, pid, ppids, cmd):
        part = super()._part(pid, ppids, cmd)
        if part != 'servers':
            return part
        seen = set()
        while pid and pid not in seen:
            if pid == self.worker_pid:
                return part
            seen.add(pid)
            pid = ppids.get(pid)
        return None


Side = collections.namedtuple('Side', 'name cloud rpc meter')


@contextlib.contextmanager
def served(args, name, cloud, scratch):
    """``allocworker-worker`` on a fresh database holding ``cloud``: a
    Side, once the worker answers."""
    directory = os.path.join(scratch, name)
    os.makedirs(directory)
    with services.fresh_database(args.backend, directory) as url:
        topic = 'aw-bench-%s-%s' % (name, uuid.uuid4().hex[:8])
        config = services.write_config(
            os.path.join(directory, 'worker.conf'), url, topic,
            workers=args.workers,
            extra='[database]\nmax_overflow = 10\n'
            '[partitions]\nbindings = %s\n' % cloud.bindings())
        services.manage(config, 'db', 'sync')
        started = time.monotonic()
        cloud.load(url)
        print('# %s: loaded %d roots in %.1f s' % (
            name, len(cloud.uuids), time.monotonic() - started),
            file=sys.stderr)
        rpc = services.BareClient(topic, timeout=120)
        worker = services.Worker(config).start(rpc)
        try:
            yield Side(name, cloud, rpc, SideMeter(
                url.rsplit('/', 1)[1].split('?')[0], worker.process.pid))
        finally:
            worker.stop()


def context():
    return {'request_id': 'req-%s' % uuid.uuid4(), 'roles': ['admin'],
            'project_id': 'bench', 'user_id': USER}


class Answers(filtered.Tally):
    """``filtered.Tally`` that also judges candidates: every one in
    ``p0`` and as many as ``p0`` has roots (up to the limit)."""

    def __init__(self, expected):
        super().__init__()
        self.expected = expected
        self.short = 0

    def candidates(self, answer, admits):
        items = answer['items']
        wrong = [i for i in items if i['status'] != 200]
        misplaced = [i for i in items if i['status'] == 200 and (
            not admits(i['root_uuid']) or
            set(i['allocations']) != {i['root_uuid']})]
        with self.lock:
            if answer['status'] != 200 and not wrong:
                wrong = [answer]
            for item in wrong:
                self.codes[item.get('code') or item['status']] += 1
            self.violations += len(misplaced)
            self.short += len(items) != self.expected
            if wrong or misplaced or len(items) != self.expected:
                self.example = self.example or '%d candidates: %s' % (
                    len(items), str((wrong + misplaced + [None])[0])[:300])


def make(side, kind, partition_of):
    """(call, tally) of one kind of call as ``nova-p0`` on ``side``."""
    def admits(root):
        return partition_of.get(root) == HOME
    tally = Answers(min(LIMIT, len(side.cloud.home())))
    if kind == 'candidates':
        def call():
            tally.candidates(side.rpc.call(
                'get_allocation_candidates', context=context(),
                request=REQUEST, limit=LIMIT), admits)
    else:
        strategy = kind.split('_')[1]

        def call():
            tally.count(side.rpc.call('claim', context=context(), items=[
                claims.new_consumer_item(str(uuid.uuid4()), request=REQUEST,
                                         strategy=strategy)]), admits)
    return call, tally


def in_turns(sides, made, concurrency, seconds, window):
    """``filtered.in_turns`` with each side's CPU read by its own meter:
    {side: figures} of ``made`` ({side: (call, tally)})."""
    turns = max(1, round(seconds / window))
    taken = {name: {'latencies': [], 'errors': [], 'elapsed': 0.0,
                    'servers': 0.0, 'database': 0.0} for name in made}
    for turn in range(turns):
        for name in SIDES if turn % 2 == 0 else SIDES[::-1]:
            meter = sides[name].meter
            before = meter.snapshot()
            latencies, errors, elapsed = load.load(
                made[name][0], concurrency, seconds / turns)
            spent = meter.spent(before, meter.snapshot())
            into = taken[name]
            into['latencies'] += latencies
            into['errors'] += errors
            into['elapsed'] += elapsed
            into['servers'] += spent['servers']
            into['database'] += spent['database']
    found = {name: filtered.figures(taken[name], made[name][1])
             for name in made}
    for name in made:
        found[name]['short'] = getattr(made[name][1], 'short', 0)
    return found


def check_clouds(sides):
    """``nova-p0`` finds exactly ``p0``'s roots on each side (a check of
    the answers that passes on a wrong cloud would mean nothing)."""
    for side in sides.values():
        home = side.cloud.home()
        answer = side.rpc.call('get_allocation_candidates',
                               context=context(), request=REQUEST,
                               limit=len(side.cloud.uuids) + 1)
        found = {item['root_uuid'] for item in answer['items']}
        if found != home:
            raise AssertionError('%s: %s finds %d roots, not the %d of %s'
                                 % (side.name, USER, len(found), len(home),
                                    HOME))


def measure(sides, args):
    """Every row, printed as it is measured."""
    partition_of = dict(sides['split'].cloud.partition_of)
    partition_of.update(sides['own'].cloud.partition_of)
    warm = {name: make(side, 'claim_spread', partition_of)
            for name, side in sides.items()}
    in_turns(sides, warm, 4, min(2.0, 2 * args.seconds), args.window)
    print(HEADER, flush=True)
    described = {name: {'trees': len(side.cloud.uuids),
                        'partitions': side.cloud.partitions,
                        'home_roots': len(side.cloud.home()),
                        'bindings': side.cloud.bindings()}
                 for name, side in sides.items()}
    rows = []
    for kind, concurrency in (('claim_spread', 1), ('claim_pack', 1),
                              ('candidates', 1), ('claim_spread', 16),
                              ('claim_pack', 16)):
        made = {name: make(side, kind, partition_of)
                for name, side in sides.items()}
        taken = in_turns(sides, made, concurrency, args.seconds,
                         args.window)
        ratio = filtered.ratios(taken['split'], taken['own'])
        rows.append({
            'row': kind, 'concurrency': concurrency, 'user': USER,
            'partition': HOME, 'backend': args.backend,
            'workers': args.workers, 'trees': args.trees,
            'limit': LIMIT if kind == 'candidates' else None,
            'candidates_per_answer': made['split'][1].expected
            if kind == 'candidates' else None,
            'sides': described, 'split': taken['split'],
            'own': taken['own'], 'ratio': ratio, 'target': TARGET,
            'met': ratio['p50_ms'] is not None and
            ratio['p50_ms'] <= TARGET})
        print(line(rows[-1]), flush=True)
    return rows


HEADER = '%-13s %3s %9s %9s %6s %4s %9s %9s %8s %8s %13s %13s %s' % (
    'row', 'c', 'split p50', 'own p50', 'ratio', 'met', 'split p99',
    'own p99', 'split/s', 'own/s', 'split cpu w+d', 'own cpu w+d', 'bad')


def bad_answers(figures):
    return sum(figures[k] for k in ('non_200', 'violations', 'errors',
                                    'short'))


def line(row):
    """One row of the printed table (ms, calls/s, CPU ms per call)."""
    split, own = row['split'], row['own']
    bad = bad_answers(split) + bad_answers(own)

    def f(value):
        return '-' if value is None else '%.1f' % value

    def cpu_ms(side):
        return '%s+%s' % (f(side['worker_cpu_ms']), f(side['db_cpu_ms']))
    return ('%-13s %3d %9s %9s %6s %4s %9s %9s %8s %8s %13s %13s %d%s' % (
        row['row'], row['concurrency'], f(split['p50_ms']),
        f(own['p50_ms']), row['ratio']['p50_ms'],
        'yes' if row['met'] else 'no', f(split['p99_ms']),
        f(own['p99_ms']), f(split['per_s']), f(own['per_s']),
        cpu_ms(split), cpu_ms(own), bad, '  e.g. %s' % (
            split['example'] or own['example']) if bad else ''))


def run(args):
    """The rows, measured on two fresh databases dropped afterwards."""
    clouds = {'split': Cloud(args.trees, ['p%d' % n
                                          for n in range(PARTITIONS)]),
              'own': Cloud(args.trees // PARTITIONS, [HOME])}
    with tempfile.TemporaryDirectory(prefix='aw-bench-parts-') as scratch:
        with contextlib.ExitStack() as stack:
            stack.callback(services.close_clients)
            sides = {name: stack.enter_context(
                served(args, name, clouds[name], scratch))
                for name in SIDES}
            check_clouds(sides)
            return measure(sides, args)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trees', type=int, default=10000,
                        help='roots of the split cloud; the own cloud '
                             'has a tenth')
    parser.add_argument('--backend', default='postgresql',
                        choices=services.BACKENDS)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--seconds', type=float, default=10,
                        help='per side and row')
    parser.add_argument('--window', type=float, default=1.0,
                        help='seconds of one side before the other')
    parser.add_argument('--out', default=OUT, help='the JSON result file')
    args = parser.parse_args(argv)
    record = results.Record('claims_partitions', argv)
    rows = run(args)
    record.write(args.out, rows)
    bad = ['%s c=%d' % (r['row'], r['concurrency']) for r in rows
           if bad_answers(r['split']) + bad_answers(r['own'])]
    print('# rows in %s; not 200 or misplaced: %s'
          % (args.out, ', '.join(bad) or 'none'))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
