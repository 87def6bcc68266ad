"""Allocation candidates at cloud scale, Placement 16 against
allocworker-api, both under uWSGI with the peers' settings, each on a
fresh PostgreSQL database of its own, the data loaded through each
server's own HTTP API (``benchmarks/candidates.py`` bulk-loads the
tables instead and serves both from a threaded wsgiref server):

    .venv/bin/python -m benchmarks.run --candidates-scale 1000,10000

The same data goes into both over their HTTP API (16 client threads): N
compute-node trees, each a root with VCPU and MEMORY_MB and two NUMA
children (``HW_NUMA_ROOT`` is left out: no request here names it), and
100 sharing storage providers with DISK_GB and
``MISC_SHARES_VIA_AGGREGATE``, each in an aggregate of its own that
every hundredth root joins (one storage pool per rack). Trees are added
up to each N in turn, and at each N both servers answer, one request at
a time, ``QUERIES`` for ``--seconds`` each (at least 5 requests): p50,
p99, CPU per request (``cpu.Meter``) and the peak resident memory of the
server's largest process (a uWSGI worker) and of all its processes.
A request a server refuses is recorded with its status, never fatal.
"""

import contextlib
import json
import os
import queue
import tempfile
import threading
import time
import uuid

from benchmarks import cpu
from benchmarks import peers
from tests.functional import services

SHARING = 100
LOAD_THREADS = 16
VERSION = '1.35'
QUERIES = [
    ('candidates_unnumbered', 'resources=VCPU:1,MEMORY_MB:1024,DISK_GB:10'
     '&limit=1000'),
    ('candidates_granular', 'resources1=VCPU:1&resources2=MEMORY_MB:1024'
     '&group_policy=none&limit=1000'),
]


def _aggregate(n):
    return str(uuid.UUID(int=n + 1))


def _set(peer, provider, what, body, generation):
    body['resource_provider_generation'] = generation
    _, answer = peer.call('PUT', '/resource_providers/%s/%s'
                          % (provider, what), body, version=VERSION)
    return answer['resource_provider_generation']


def load_sharing(peer):
    for n in range(SHARING):
        provider = peer.create_provider('storage-%d' % n)
        generation = _set(peer, provider, 'inventories', {'inventories': {
            'DISK_GB': {'total': 100000}}}, 0)
        generation = _set(peer, provider, 'traits', {
            'traits': ['MISC_SHARES_VIA_AGGREGATE']}, generation)
        _set(peer, provider, 'aggregates', {
            'aggregates': [_aggregate(n)]}, generation)


def load_tree(peer, n):
    root = peer.create_provider('cn-%d' % n)
    generation = _set(peer, root, 'inventories', {'inventories': {
        'VCPU': {'total': 64, 'allocation_ratio': 4.0},
        'MEMORY_MB': {'total': 262144}}}, 0)
    _set(peer, root, 'aggregates', {
        'aggregates': [_aggregate(n % SHARING)]}, generation)
    for numa in (0, 1):
        peer.create_provider('cn-%d-numa%d' % (n, numa), parent=root)


def load_trees(peer, first, last):
    """Trees ``first`` .. ``last - 1`` from LOAD_THREADS threads."""
    work, errors = queue.Queue(), []
    for n in range(first, last):
        work.put(n)

    def loop():
        while True:
            try:
                n = work.get_nowait()
            except queue.Empty:
                return
            try:
                load_tree(peer, n)
            except Exception as exc:
                errors.append(exc)
                return

    threads = [threading.Thread(target=loop) for _ in range(LOAD_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


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


def measure(peer, path, seconds, meter):
    latencies, status, count, message = [], None, None, ''
    watch = RssWatch(peer.server.process.pid)
    before = meter.snapshot()
    stop = time.monotonic() + seconds
    while time.monotonic() < stop or len(latencies) < 5:
        started = time.monotonic()
        try:
            status, body = peer.call('GET', path, version=VERSION,
                                     expect=(200,))
            count = len(body['allocation_requests'])
        except peers.Refused as refused:
            status, message = refused.status, _detail(refused.body)
            break
        latencies.append(time.monotonic() - started)
    spent = meter.spent(before, meter.snapshot())
    watch.stop()
    calls = max(len(latencies), 1)
    ordered = sorted(latencies)

    def percentile(fraction):
        if not ordered:
            return None
        index = min(len(ordered) - 1, int(fraction * len(ordered)))
        return round(ordered[index] * 1000, 1)

    return {'status': status, 'refused': message or None,
            'requests': len(latencies), 'candidates': count,
            'p50_ms': percentile(0.5), 'p99_ms': percentile(0.99),
            'cpu_ms': round(spent['machine'] * 1000 / calls, 2),
            'cpu_ms_own': round(spent['own'] * 1000 / calls, 2),
            'rss_peak_mb': round(watch.peak / 2 ** 20, 1),
            'rss_all_peak_mb': round(watch.peak_total / 2 ** 20, 1)}


def report(row, as_json):
    if as_json:
        print(json.dumps(row), flush=True)
        return
    print('%-22s %-16s trees %6d  p50 %9s p99 %9s ms  ratio %6s  '
          'cpu/req %8.2f own %8.2f ms  rss %6.1f (all %6.1f) MiB  '
          'n=%d cand=%s%s'
          % (row['workload'], row['server'], row['trees'], row['p50_ms'],
             row['p99_ms'], row['ratio'], row['cpu_ms'], row['cpu_ms_own'],
             row['rss_peak_mb'], row['rss_all_peak_mb'], row['requests'],
             row['candidates'],
             '  REFUSED: %s' % row['refused'] if row['refused'] else ''),
          flush=True)


def main(args):
    sizes = sorted(int(n) for n in args.candidates_scale.split(','))
    seconds = max(args.seconds, 1.0)
    with tempfile.TemporaryDirectory() as scratch, \
            contextlib.ExitStack() as stack:
        placement_db = stack.enter_context(
            services.fresh_database('postgresql', scratch))
        api_db = stack.enter_context(
            services.fresh_database('postgresql', scratch))
        config = services.write_config(
            os.path.join(scratch, 'api.conf'), api_db, 'aw-candidates',
            extra='[api]\nauth_strategy = noauth2\n')
        services.manage(config, 'db', 'sync')
        servers = {}
        for name, start in (
                ('placement', lambda: peers.start_placement(placement_db,
                                                            scratch)),
                ('allocworker-api',
                 lambda: peers.start_allocworker_api(config, scratch))):
            server = start()
            stack.callback(server.stop)
            servers[name] = peers.HttpPeer(server, version=VERSION)
        meter = cpu.Meter([d.rsplit('/', 1)[1] for d in (placement_db,
                                                         api_db)])
        for peer in servers.values():
            load_sharing(peer)
        loaded, rows = 0, []
        for size in sizes:
            for name, peer in servers.items():
                started = time.monotonic()
                load_trees(peer, loaded, size)
                print('# %s: trees %d..%d loaded in %.0f s'
                      % (name, loaded, size, time.monotonic() - started),
                      flush=True)
            loaded = size
            for workload, query in QUERIES:
                path = '/allocation_candidates?' + query
                results = {name: measure(peer, path, seconds, meter)
                           for name, peer in servers.items()}
                base = results['placement']
                for name, result in results.items():
                    ratio = None
                    if name != 'placement' and base['p50_ms'] and \
                            result['status'] == 200 == base['status']:
                        ratio = round(result['p50_ms'] / base['p50_ms'], 3)
                    row = dict(workload=workload, server=name, trees=size,
                               providers=3 * size + SHARING, ratio=ratio,
                               **result)
                    rows.append(row)
                    report(row, args.json)
    return 0
