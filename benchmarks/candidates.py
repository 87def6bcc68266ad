"""Allocation candidates at cloud scale: allocworker-api beside Placement 16.

    .venv/bin/python -m benchmarks.candidates [--trees 1000 10000]
        [--backend postgresql|mysql|sqlite] [--load bulk|http]
        [--serve wsgiref|uwsgi] [--seconds 10] [--calls 5]
        [--placement-python PYTHON | --no-placement]
        [--placement-up-to TREES] [--json]
    .venv/bin/python -m benchmarks.run --candidates-scale 1000,10000
        # the same with --load http --serve uwsgi --backend postgresql

Each server gets a fresh database of its own on ``--backend`` and the
same cloud: 100 sharing storage providers (DISK_GB 100000,
``MISC_SHARES_VIA_AGGREGATE``, each in an aggregate of its own) and N
compute trees, each a root with no inventory that joins aggregate
``n % 100`` (one storage pool per rack) and two NUMA children with VCPU
32 and MEMORY_MB 131072 each. The inventory sits on the NUMA children,
not on the root, because that is the layout that makes a candidate
search work for its answer: an unnumbered request may take VCPU and
MEMORY_MB from either child (four candidates a tree, with the shared
disk), and a granular request with ``group_policy=isolate`` only has
candidates when the groups land on different children. With the
inventory on the root every tree has one candidate and the granular
request cannot ask for isolation, which hides the nested-tree work
Placement's cost grows with. (Nova without NUMA in Placement reports on
the root: that is the easier case of this one.)

Trees are added up to each N in turn with the servers kept running, and
at each N both servers answer ``REQUESTS`` one at a time for
``--seconds`` (at least ``--calls`` requests, after one unmeasured
warm-up request) at microversion 1.36:

- ``unnumbered``: ``resources=VCPU:1,MEMORY_MB:1024,DISK_GB:10``
- ``granular``: ``resources1=VCPU:1,MEMORY_MB:1024&resources2=VCPU:1,
  MEMORY_MB:1024&group_policy=isolate``
- ``nova``: ``unnumbered`` with ``root_required=!COMPUTE_STATUS_DISABLED``
  (what Nova's scheduler sends for every boot)

all with ``limit=1000``. The choices:

- ``--load bulk``: the rows go straight into each server's tables with
  SQL (seconds for 10,000 trees; any backend); ``--load http``: through
  each server's own HTTP API from 16 client threads (about 50 trees/s
  per server on a 2-core machine), as a deployment would fill it;
- ``--serve wsgiref``: allocworker-api's own threaded server and
  ``placement_server.py`` (the same threaded wsgiref server for
  Placement); ``--serve uwsgi``: both under uWSGI with the settings of
  Placement's install guide, 10 threads in each of a process per core
  (``peers.py``).

Placement 16 is served by ``--placement-python`` (default
``.venv-placement``, made on first use with the PostgreSQL and MariaDB
drivers), tuned as for a large cloud either way: ``[placement]
max_allocation_candidates = 1000`` and
``allocation_candidates_generation_strategy = breadth-first``
(``placement_server.TUNING``; AW_BENCH_PLACEMENT_MAX_CANDIDATES and
AW_BENCH_PLACEMENT_STRATEGY override them). Per row: p50, p99, CPU
per request of the run's own processes and of the machine
(``cpu.Meter``), the peak resident memory of the server's largest
process and of all its processes, the candidates and provider
summaries returned, and ``ratio``, allocworker's p50 over Placement's.
A request a server refuses is recorded with its status and message
(``REFUSED``), never fatal.
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import candidates_cloud as cloud  # noqa: E402
from benchmarks import cpu  # noqa: E402
from benchmarks import load  # noqa: E402
from benchmarks import peers  # noqa: E402
from tests.functional import services  # noqa: E402

VERSION = cloud.VERSION
REQUESTS = [
    ('unnumbered', 'resources=VCPU:1,MEMORY_MB:1024,DISK_GB:10&limit=1000'),
    ('granular', 'resources1=VCPU:1,MEMORY_MB:1024&resources2=VCPU:1,'
     'MEMORY_MB:1024&group_policy=isolate&limit=1000'),
    ('nova', 'resources=VCPU:1,MEMORY_MB:1024,DISK_GB:10&root_required='
     '!COMPUTE_STATUS_DISABLED&limit=1000'),
]


# -- the servers --------------------------------------------------------------

class Threaded(object):
    """A threaded wsgiref server in a child process, shaped like
    ``peers.Uwsgi`` (name, base, process, stop)."""

    def __init__(self, name, process, port):
        self.name, self.process = name, process
        self.base = 'http://127.0.0.1:%d' % port
        services.wait_for_http(self.base, seconds=120)

    def stop(self):
        self.process.terminate()
        self.process.wait(30)


def start_allocworker(url, serve, scratch):
    config = services.write_config(
        os.path.join(scratch, 'api.conf'), url, 'aw-candidates',
        extra='[api]\nauth_strategy = noauth2\n')
    services.manage(config, 'db', 'sync')
    if serve == 'uwsgi':
        return peers.start_allocworker_api(config, scratch)
    process, port = services.start_api(url, scratch, name='wsgiref',
                                       stderr=subprocess.DEVNULL)
    return Threaded('allocworker-api', process, port)


def start_placement(python, url, serve, scratch):
    if serve == 'uwsgi':
        return peers.start_placement(url, scratch, os.path.dirname(python))
    port = services.free_port()
    process = subprocess.Popen(
        [python, os.path.join(ROOT, 'benchmarks', 'placement_server.py'),
         str(port), url, scratch], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    return Threaded('placement', process, port)


# -- measuring ---------------------------------------------------------------

class RssWatch(object):
    """Peak resident memory of a server's processes while measuring."""

    def __init__(self, pid):
        self.pid, self.peak, self.peak_total = pid, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self):
        while not self._stop.is_set():
            largest, total = cpu.rss_bytes([self.pid])
            self.peak = max(self.peak, largest)
            self.peak_total = max(self.peak_total, total)
            self._stop.wait(0.05)

    def stop(self):
        self._stop.set()
        self._thread.join()


def _detail(body):
    try:
        return json.loads(body)['errors'][0]['detail'][:300]
    except (ValueError, KeyError, IndexError, TypeError):
        return body[:300].decode('utf-8', 'replace')


def measure(peer, path, seconds, calls, meter):
    """One request against one server: a row's figures."""
    latencies, status, body, message = [], None, None, None
    watch = RssWatch(peer.server.process.pid)
    before = meter.snapshot()
    stop = time.monotonic() + seconds
    # The first answer warms imports, caches and connections: not timed.
    while len(latencies) < calls + 1 or time.monotonic() < stop:
        started = time.monotonic()
        try:
            status, body = peer.call('GET', path, version=VERSION,
                                     expect=(200,))
        except peers.Refused as refused:
            status, message = refused.status, _detail(refused.body)
            break
        latencies.append(time.monotonic() - started)
    spent = meter.spent(before, meter.snapshot())
    watch.stop()
    done = max(len(latencies), 1)
    timed = latencies[1:]

    def percentile(fraction):
        if not timed:
            return None
        return round(load.percentile(timed, fraction) * 1000, 1)

    return {'status': status, 'refused': message,
            'requests': len(timed),
            'candidates': len(body['allocation_requests']) if body else None,
            'summaries': len(body['provider_summaries']) if body else None,
            'p50_ms': percentile(0.5), 'p99_ms': percentile(0.99),
            'cpu_ms': round(spent['machine'] * 1000 / done, 2),
            'cpu_ms_own': round(spent['own'] * 1000 / done, 2),
            'rss_peak_mb': round(watch.peak / 2 ** 20, 1),
            'rss_all_peak_mb': round(watch.peak_total / 2 ** 20, 1)}


def report(row, as_json):
    if as_json:
        print(json.dumps(row), flush=True)
        return
    print('%-10s %-15s %-10s trees %6d  %s  p50 %9s p99 %9s ms  ratio %6s'
          '  cpu/req %8.2f own %8.2f ms  rss %6.1f (all %6.1f) MiB  n=%d '
          'cand=%s%s' % (
              row['workload'], row['server'], row['backend'], row['trees'],
              row['status'], row['p50_ms'], row['p99_ms'], row['ratio'],
              row['cpu_ms'], row['cpu_ms_own'], row['rss_peak_mb'],
              row['rss_all_peak_mb'], row['requests'], row['candidates'],
              '  REFUSED: %s' % row['refused'] if row['refused'] else ''),
          flush=True)


class Cloud(object):
    """The servers measured, each on a fresh database of its own, and the
    trees loaded into all of them so far (``--load``'s way)."""

    def __init__(self, args, stack, scratch):
        self.args, self.peers, self.loaders, self.loaded = args, {}, {}, 0
        placement = None if args.no_placement else (
            args.placement_python or
            os.path.join(peers.placement_bin(), 'python'))
        urls = {}
        for name in ('placement', 'allocworker-api') if placement else (
                'allocworker-api',):
            folder = os.path.join(scratch, name)
            os.makedirs(folder)
            url = urls[name] = stack.enter_context(
                services.fresh_database(args.backend, folder))
            server = start_placement(placement, url, args.serve, folder) \
                if name == 'placement' else start_allocworker(
                    url, args.serve, folder)
            stack.callback(server.stop)
            self.peers[name] = peers.HttpPeer(server, version=VERSION)
            if args.load == 'bulk':
                loader = self.loaders[name] = cloud.BulkLoader(
                    url, name == 'placement')
                stack.callback(loader.close)
        self.meter = cpu.Meter([u.rsplit('/', 1)[1].split('?')[0]
                                for u in urls.values()])
        if args.load == 'bulk':
            rows = cloud.sharing_rows()
            for loader in self.loaders.values():
                loader.load(rows, sharing=True)
        else:
            for peer in self.peers.values():
                cloud.http_sharing(peer)

    def grow(self, trees):
        cap = self.args.placement_up_to
        if cap is not None and trees > cap and 'placement' in self.peers:
            # Past the cap Placement is neither grown nor asked (its
            # server idles until the run ends).
            del self.peers['placement']
            self.loaders.pop('placement', None)
        started = time.monotonic()
        if self.args.load == 'bulk':
            rows = cloud.tree_rows(self.loaded, trees)
            for loader in self.loaders.values():
                loader.load(rows)
        else:
            for peer in self.peers.values():
                cloud.http_trees(peer, self.loaded, trees)
        print('# trees %d..%d loaded (%s) in %.0f s' % (
            self.loaded, trees, self.args.load, time.monotonic() - started),
            file=sys.stderr, flush=True)
        self.loaded = trees

    def measure(self, workload, query):
        """One request on every server: a row each, the ratio to
        Placement's p50 on allocworker's."""
        args = self.args
        results = {name: measure(peer, '/allocation_candidates?' + query,
                                 args.seconds, args.calls, self.meter)
                   for name, peer in self.peers.items()}
        base, rows = results.get('placement'), []
        for name, result in results.items():
            ratio = None
            if name != 'placement' and base and base['p50_ms'] and \
                    result['status'] == 200 == base['status']:
                ratio = round(result['p50_ms'] / base['p50_ms'], 3)
            rows.append(dict(
                workload=workload, server=name, backend=args.backend,
                load=args.load, serve=args.serve, trees=self.loaded,
                providers=3 * self.loaded + cloud.SHARING, ratio=ratio,
                **result))
        if len({r['candidates'] for r in rows}) > 1:
            print('# %s, %d trees: the servers disagree on the candidates'
                  % (workload, self.loaded), file=sys.stderr, flush=True)
        return rows


def run(args):
    """Every tree count, request and server: the rows, printed as they
    come."""
    rows = []
    with tempfile.TemporaryDirectory() as scratch, \
            contextlib.ExitStack() as stack:
        servers = Cloud(args, stack, scratch)
        for trees in sorted(args.trees):
            servers.grow(trees)
            for workload, query in REQUESTS:
                for row in servers.measure(workload, query):
                    rows.append(row)
                    report(row, args.json)
    return rows


def parser():
    options = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    options.add_argument('--trees', type=int, nargs='+',
                         default=[1000, 10000])
    options.add_argument('--backend', default='postgresql',
                         choices=services.BACKENDS)
    options.add_argument('--load', default='bulk', choices=('bulk', 'http'),
                         help='SQL into the tables, or through each '
                         "server's HTTP API")
    options.add_argument('--serve', default='wsgiref',
                         choices=('wsgiref', 'uwsgi'))
    options.add_argument('--seconds', type=float, default=10.0,
                         help='measuring time per request and server')
    options.add_argument('--calls', type=int, default=5,
                         help='at least this many timed requests')
    options.add_argument('--placement-python',
                         help='the interpreter serving Placement 16 (with '
                         'the database driver; under uWSGI, its venv has '
                         'uwsgi); default .venv-placement')
    options.add_argument('--no-placement', action='store_true',
                         help='allocworker-api alone')
    options.add_argument('--placement-up-to', type=int, metavar='TREES',
                         help='measure Placement up to this many trees '
                         'only (at 100,000 one request takes minutes)')
    options.add_argument('--json', action='store_true')
    return options


def main(argv=None):
    run(parser().parse_args(argv))
    return 0


if __name__ == '__main__':
    sys.exit(main())
