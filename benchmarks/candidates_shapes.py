"""``GET /allocation_candidates`` per request shape: allocworker-api
beside Placement 16 tuned for a large cloud, in the same run, with
single allocates over RPC beside them for the target's other bound.

    .venv/bin/python -m benchmarks.candidates_shapes [--trees 10000]
        [--seconds 10] [--window 2] [--workers 2]
        [--out benchmarks/results/candidates_shapes.json]

The cloud is ``claims_filtered``'s (``claims_filtered.Cloud``):
``--trees`` flat compute roots with VCPU, MEMORY_MB and DISK_GB, 1% of
them in one aggregate (the zone), another 1% with CUSTOM_RARE, another 2%
with COMPUTE_STATUS_DISABLED, at random. Each side has a fresh PostgreSQL
database of its own, bulk-loaded with SQL:

- ``allocworker``: loaded (``Cloud.load``) before anything serves it,
  then ``allocworker-worker`` (``--workers`` processes, for the
  allocates) and allocworker-api (``allocworker.cmd.wsgi:application``)
  under uWSGI (``peers.start_allocworker_api``);
- ``placement``: Placement 16.0.0 under uWSGI (``peers.start_placement``:
  ``[placement] max_allocation_candidates = 1000``,
  ``allocation_candidates_generation_strategy = breadth-first``, as
  ``placement_server.TUNING`` says), the same rows written into its
  tables after it started (it syncs the standard traits on start).

Both under uWSGI alike: ``peers.PROCESSES`` processes (one per core) x
``peers.THREADS`` threads. Per shape, ``GET /allocation_candidates?
resources=DISK_GB:1,MEMORY_MB:256,VCPU:1&limit=1000&<filter>`` at
microversion 1.39, the filter: ``plain`` (none), ``not_disabled``
(``required=!COMPUTE_STATUS_DISABLED``, Nova's default), ``member_of``
(the zone), ``required_rare`` (``required=CUSTOM_RARE``),
``root_required_rare`` (``root_required=CUSTOM_RARE``), ``in_tree`` (a
random root per request).
allocworker-api, Placement and ``allocate`` over RPC (one new consumer,
the request's amounts on a random named root: ``claims_filtered``'s)
take turns in windows of ``--window`` s (A B C C B A ...), one call at a
time, until each had ``--seconds``, after an uncounted warm-up of each.

Per side and shape: p50/p99 (the request as the client sees it: answer
decoded, not yet checked), CPU per call of the side's own server
processes and of its database's backends (``cpu.Meter``), answers not
200, answers with a candidate that breaks the filter (not exactly one
provider, a provider the filter does not admit, other amounts than
asked) and answers of another size than ``min(limit, roots admitted)``.
The target per shape: allocworker's p50 at most 0.2x Placement's, or
at most 2x an allocate's p50 where that is larger. Exit status 1 when
an answer was not 200, broke its filter or a call raised.
"""

import argparse
import collections
import contextlib
import os
import random
import sys
import tempfile
import time
import urllib.parse
import uuid

import psutil
import sqlalchemy as sa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import candidates_cloud  # noqa: E402
from benchmarks import claims  # noqa: E402
from benchmarks import claims_filtered  # noqa: E402
from benchmarks import cpu  # noqa: E402
from benchmarks import load  # noqa: E402
from benchmarks import nova_mix  # noqa: E402
from benchmarks import peers  # noqa: E402
from benchmarks import placement_server  # noqa: E402
from benchmarks import results  # noqa: E402
from tests.functional import services  # noqa: E402

from benchmarks.claims_filtered import (  # noqa: E402
    DISABLED, RARE, REQUEST, ZONE)

VERSION = '1.39'
LIMIT = 1000
OUT = os.path.join('benchmarks', 'results', 'candidates_shapes.json')
KINDS = ('allocworker', 'placement', 'allocate')


def query(request):
    """A ``claims_filtered.shapes`` request as Placement's query."""
    group = request['groups'][0]
    params = [('resources', ','.join(
        '%s:%d' % kv for kv in sorted(group['resources'].items())))]
    for key, values in (('required', group.get('required')),
                        ('member_of', group.get('member_of')),
                        ('root_required', request.get('root_required'))):
        if values:
            params.append((key, ','.join(values) if key != 'member_of' or
                           len(values) == 1 else 'in:' + ','.join(values)))
    if group.get('in_tree'):
        params.append(('in_tree', group['in_tree']))
    params.append(('limit', LIMIT))
    return urllib.parse.urlencode(params, safe=':,!')


def load_placement(cloud, url):
    """The cloud's rows and traits into Placement 16's fresh tables."""
    loader = candidates_cloud.BulkLoader(url, placement=True)
    t = loader.t
    try:
        with loader.engine.begin() as conn:
            # The members' aggregate 0 is Placement's aggregate id 1.
            candidates_cloud._insert(conn, t['placement_aggregates'],
                                     [{'id': 1, 'uuid': ZONE}])
        loader.load(cloud.rows())
        with loader.engine.begin() as conn:
            candidates_cloud._insert(conn, t['traits'], [{'name': RARE}])
            ids = dict(conn.execute(sa.select(
                t['traits'].c.name, t['traits'].c.id).where(
                    t['traits'].c.name.in_([RARE, DISABLED]))).all())
            candidates_cloud._insert(conn, t['resource_provider_traits'], [
                {'resource_provider_id': n + 1, 'trait_id': ids[name]}
                for name, held in ((RARE, cloud.rare),
                                   (DISABLED, cloud.disabled))
                for n in held])
            conn.exec_driver_sql('ANALYZE')  # the traits came after load's
    finally:
        loader.close()


class Tally(object):
    """What one kind of call of a shape answered (one call at a time)."""

    def __init__(self):
        self.codes = collections.Counter()
        self.broken_answers = self.broken_candidates = self.short = 0
        self.sizes = collections.Counter()
        self.example = None

    def refused(self, what):
        self.codes[what] += 1
        self.example = self.example or str(what)[:300]

    def check(self, body, admits, roots, expected):
        """Every candidate on exactly one root the filter admits, with
        the amounts asked; the answer of the size expected."""
        found = body['allocation_requests']
        self.sizes[len(found)] += 1
        broken = [c for c in found if len(c['allocations']) != 1 or any(
            p not in roots or (admits is not None and not admits(p)) or
            held['resources'] != REQUEST
            for p, held in c['allocations'].items())]
        if broken:
            self.broken_answers += 1
            self.broken_candidates += len(broken)
            self.example = self.example or 'breaks the filter: %s' % (
                str(broken[0])[:250])
        if len(found) != expected:
            self.short += 1
            self.example = self.example or '%d candidates, not %d' % (
                len(found), expected)


def candidates_call(peer, make, tally, roots, expected):
    """One GET of the shape on ``peer``: its latency, the answer checked
    after the clock stopped."""
    def call():
        request, admits = make()
        path = '/allocation_candidates?' + query(request)
        started = time.monotonic()
        try:
            _, body = peer.call('GET', path, version=VERSION, expect=(200,))
        except peers.Refused as refused:
            tally.refused('%s %s' % (refused.status, refused.body[:200]))
            return time.monotonic() - started
        took = time.monotonic() - started
        tally.check(body, admits, roots, expected)
        return took
    return call


def allocate_call(rpc, cloud, tally):
    """One single allocate naming a random root, as claims_filtered's."""
    def call():
        item = claims.new_consumer_item(str(uuid.uuid4()), allocations={
            random.choice(cloud.uuids): dict(REQUEST)})
        started = time.monotonic()
        answer = rpc.allocate(items=[item])['items'][0]
        took = time.monotonic() - started
        if answer['status'] != 200:
            tally.refused('%s %s' % (answer['status'], answer.get('code')))
        return took
    return call


class Kind(object):
    """One kind of call: who serves it (the root process of its server)
    and which database, so its CPU is its own."""

    def __init__(self, name, server_pid, database):
        self.name, self.server_pid = name, server_pid
        self.meter = cpu.Meter([database])
        self.call = self.tally = None

    def server_pids(self):
        try:
            process = psutil.Process(self.server_pid)
            return {self.server_pid} | {
                p.pid for p in process.children(recursive=True)}
        except psutil.Error:
            return set()

    def window(self, seconds, taken):
        """Calls one at a time for ``seconds``, added into ``taken``."""
        before = self.meter.snapshot()
        stop = time.monotonic() + seconds
        began = time.monotonic()
        while time.monotonic() < stop:
            try:
                taken['latencies'].append(self.call())
            except Exception as exc:  # counted, shown, never hidden
                taken['errors'].append(repr(exc)[:300])
        taken['elapsed'] += time.monotonic() - began
        after = self.meter.snapshot()
        taken['servers'] += sum(
            max(0.0, after[pid][1] - before.get(pid, (None, 0.0))[1])
            for pid in self.server_pids() if pid in after)
        taken['database'] += self.meter.spent(before, after)['database']


def in_turns(kinds, seconds, window):
    """Each kind for ``seconds`` in windows, the order turned each time
    (A B C C B A ...): {kind name: figures}."""
    turns = max(1, round(seconds / window))
    taken = {kind.name: {'latencies': [], 'errors': [], 'elapsed': 0.0,
                         'servers': 0.0, 'database': 0.0} for kind in kinds}
    for turn in range(turns):
        for kind in kinds if turn % 2 == 0 else kinds[::-1]:
            kind.window(seconds / turns, taken[kind.name])
    return {kind.name: figures(taken[kind.name], kind.tally)
            for kind in kinds}


def figures(taken, tally):
    latencies, count = taken['latencies'], len(taken['latencies'])

    def ms(seconds, per=1):
        return round(1000 * seconds / per, 2) if count else None
    return {
        'calls': count,
        'p50_ms': ms(load.percentile(latencies, 0.5)) if count else None,
        'p99_ms': ms(load.percentile(latencies, 0.99)) if count else None,
        'server_cpu_ms': ms(taken['servers'], count),
        'db_cpu_ms': ms(taken['database'], count),
        'non_200': sum(tally.codes.values()), 'codes': dict(tally.codes),
        'broken_answers': tally.broken_answers,
        'broken_candidates': tally.broken_candidates,
        'short_answers': tally.short,
        'candidates': {str(k): v for k, v in sorted(tally.sizes.items())},
        'errors': len(taken['errors']),
        'example': tally.example or (taken['errors'] or [None])[0],
    }


def judged(row):
    """The target: allocworker's p50 <= 0.2x Placement's, or <= 2x an
    allocate's p50 where that is larger."""
    mine = row['allocworker']['p50_ms']
    theirs = row['placement']['p50_ms']
    allocate = row['allocate']['p50_ms']
    row['ratio_p50'] = round(mine / theirs, 3) if mine and theirs else None
    bounds = [(0.2 * theirs, '0.2x placement p50')] if theirs else []
    bounds += [(2 * allocate, '2x allocate p50')] if allocate else []
    if mine is None or not bounds:
        row.update(target_ms=None, target_by=None, met=False)
        return row
    bound, by = max(bounds)
    row.update(target_ms=round(bound, 2), target_by=by, met=mine <= bound)
    return row


def arm(kind, sides, cloud, make, expected):
    """``kind``'s call of the shape ``make``, with a fresh tally."""
    kind.tally = Tally()
    kind.call = allocate_call(sides['rpc'], cloud, kind.tally) \
        if kind.name == 'allocate' else candidates_call(
            sides[kind.name], make, kind.tally, frozenset(cloud.uuids),
            expected)


def measure(sides, cloud, args):
    """Every shape's row, printed as it is measured."""
    print(HEADER, flush=True)
    rows = []
    for name, filters, admitted, make in claims_filtered.shapes(cloud):
        expected = 1 if name == 'in_tree' else min(LIMIT, admitted)
        for kind in sides['kinds']:
            # Connections, caches and plans of the shape (in every server
            # process): not counted.
            arm(kind, sides, cloud, make, expected)
            load.load(kind.call, peers.PROCESSES, min(args.window, 2.0))
            arm(kind, sides, cloud, make, expected)
        request, _ = make()
        shown = query(request)
        if name == 'in_tree':
            shown = shown.replace(request['groups'][0]['in_tree'],
                                  '<a random root per request>')
        row = dict({'row': name, 'query': shown, 'filters': filters,
                    'admitted_roots': admitted, 'expected_candidates':
                    expected, 'trees': args.trees, 'concurrency': 1,
                    'version': VERSION},
                   **in_turns(sides['kinds'], args.seconds, args.window))
        row.update(sides['about'])
        rows.append(judged(row))
        print(line(rows[-1]), flush=True)
    return rows


HEADER = '%-19s %8s %8s %8s %8s %7s %8s %8s %4s %13s %13s %s' % (
    'shape', 'aw p50', 'aw p99', 'pl p50', 'pl p99', 'aw/pl', 'alloc50',
    'target', 'met', 'aw cpu s+db', 'pl cpu s+db', 'bad')


def _f(value):
    return '-' if value is None else '%.1f' % value


def bad(figures):
    return sum(figures[k] for k in ('non_200', 'broken_answers', 'errors'))


def line(row):
    """One row of the printed table (ms; CPU ms per call)."""
    aw, pl = row['allocworker'], row['placement']
    worst = bad(aw) + bad(pl) + bad(row['allocate'])
    shorts = aw['short_answers'] + pl['short_answers']

    def cpu_ms(f):
        return '%s+%s' % (_f(f['server_cpu_ms']), _f(f['db_cpu_ms']))
    return '%-19s %8s %8s %8s %8s %7s %8s %8s %4s %13s %13s %d%s%s' % (
        row['row'], _f(aw['p50_ms']), _f(aw['p99_ms']), _f(pl['p50_ms']),
        _f(pl['p99_ms']), row['ratio_p50'], _f(row['allocate']['p50_ms']),
        _f(row['target_ms']), 'yes' if row['met'] else 'NO', cpu_ms(aw),
        cpu_ms(pl), worst, '  (%d answers of another size)' % shorts
        if shorts else '', '  e.g. %s' % (
            aw['example'] or pl['example'] or row['allocate']['example'])
        if worst or shorts else '')


@contextlib.contextmanager
def served(args, cloud, scratch):
    """Both sides loaded and served: {'allocworker': peer, 'placement':
    peer, 'rpc': client, 'kinds': [Kind], 'about': how each is served}."""
    with contextlib.ExitStack() as stack:
        folder, aw_url = nova_mix.fresh_database(stack, scratch,
                                                 'allocworker')
        topic = 'aw-bench-%s' % uuid.uuid4().hex[:8]
        config = services.write_config(
            os.path.join(folder, 'worker.conf'), aw_url, topic,
            workers=args.workers, extra='[database]\nmax_overflow = 10\n'
            '[api]\nauth_strategy = noauth2\n')
        services.manage(config, 'db', 'sync')
        started = time.monotonic()
        cloud.load(aw_url)  # before anything serves it: the whole cloud
        rpc = services.BareClient(topic, timeout=120)
        stack.callback(services.close_clients)
        worker = services.Worker(config).start(rpc)
        stack.callback(worker.stop)
        api = peers.start_allocworker_api(config, folder)
        stack.callback(api.stop)
        folder, pl_url = nova_mix.fresh_database(stack, scratch, 'placement')
        placement = peers.start_placement(pl_url, folder)
        stack.callback(placement.stop)
        load_placement(cloud, pl_url)
        print('# %d roots loaded and served on both sides in %.0f s' % (
            args.trees, time.monotonic() - started), file=sys.stderr)
        claims_filtered.check_cloud(rpc, cloud)

        def database(url):
            return url.rsplit('/', 1)[1].split('?')[0]
        uwsgi = {'uwsgi processes': peers.PROCESSES,
                 'uwsgi threads': peers.THREADS}
        yield {'allocworker': peers.HttpPeer(api),
               'placement': peers.HttpPeer(placement), 'rpc': rpc,
               'kinds': [Kind('allocworker', api.process.pid,
                              database(aw_url)),
                         Kind('placement', placement.process.pid,
                              database(pl_url)),
                         Kind('allocate', worker.process.pid,
                              database(aw_url))],
               'about': {'placement_tuning': dict(
                   placement_server.tuning(), **uwsgi),
                   'allocworker_serving': dict(
                       uwsgi, **{'worker processes (allocate)':
                                 args.workers})}}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trees', type=int, default=10000)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--seconds', type=float, default=10,
                        help='per kind of call (allocworker, placement, '
                        'allocate) and shape')
    parser.add_argument('--window', type=float, default=2.0,
                        help='seconds of one kind before the next')
    parser.add_argument('--out', default=OUT, help='the JSON result file')
    args = parser.parse_args(argv)
    record = results.Record('candidates_shapes', argv)
    cloud = claims_filtered.Cloud(args.trees)
    with tempfile.TemporaryDirectory(prefix='aw-bench-shapes-') as scratch:
        with served(args, cloud, scratch) as sides:
            rows = measure(sides, cloud, args)
    record.write(args.out, rows)
    print('# rows in %s' % args.out)
    return 1 if any(bad(r[k]) for r in rows for k in KINDS) else 0


if __name__ == '__main__':
    sys.exit(main())
