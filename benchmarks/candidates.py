"""Allocation candidates at cloud scale, through allocworker-api.

    .venv/bin/python -m benchmarks.candidates [--trees 1000 10000]
                                              [--backend postgresql]
                                              [--calls 20] [--json]

For each tree count: a fresh database, ``db sync``, then (bulk-loaded, not
through the API, which would take an hour) N compute trees, each a root
with two NUMA children (VCPU 32, MEMORY_MB 131072 each), and 100 sharing
storage providers (DISK_GB 100000, MISC_SHARES_VIA_AGGREGATE), root i and
storage provider i % 100 in one aggregate. Then ``allocworker-api`` on
that database answers, one call at a time:

- ``unnumbered``: ``resources=VCPU:1,MEMORY_MB:1024,DISK_GB:10&limit=1000``
- ``granular``: ``resources1=VCPU:1,MEMORY_MB:1024&resources2=VCPU:1,
  MEMORY_MB:1024&group_policy=isolate&limit=1000``
- ``nova``: ``unnumbered`` with ``root_required=!COMPUTE_STATUS_DISABLED``
  (what Nova's scheduler sends for every boot)

With ``--placement-python`` Placement 16 (from PyPI, in its own venv
with the database driver) is started on a fresh database of the same
backend by ``benchmarks/placement_server.py`` (the same threaded wsgiref
server) and measured on the same rows.

Rows: ``server, workload, backend, trees, p50_ms, p99_ms, candidates,
summaries, rss_mb`` (the server process's resident memory after the
calls, to see it stay flat as the trees grow).
"""

import argparse
import collections
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

import sqlalchemy as sa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from allocworker.db import schema  # noqa: E402
from tests.functional import services  # noqa: E402

SHARING = 100
WORKLOADS = [
    ('unnumbered', 'resources=VCPU:1,MEMORY_MB:1024,DISK_GB:10&limit=1000'),
    ('granular', 'resources1=VCPU:1,MEMORY_MB:1024&resources2=VCPU:1,'
     'MEMORY_MB:1024&group_policy=isolate&limit=1000'),
    # What Nova's scheduler sends for every boot (root_required from 1.35).
    ('nova', 'resources=VCPU:1,MEMORY_MB:1024,DISK_GB:10&root_required='
     '!COMPUTE_STATUS_DISABLED&limit=1000'),
]


Layout = collections.namedtuple('Layout', [
    'providers', 'inventories', 'members', 'sharing', 'aggregates'])


def layout(trees):
    """Trees of a root and two NUMA children, and sharing disk: rows of
    (id, uuid, name, parent id, root id), (provider id, class, total),
    (provider id, aggregate index), sharing provider ids, aggregates."""
    providers, inventories, members, sharing = [], [], [], []

    def provider(parent, root, name):
        pid = len(providers) + 1
        providers.append((pid, str(uuid.uuid4()), name, parent, root or pid))
        return pid

    for n in range(SHARING):
        pid = provider(None, None, 'storage-%d' % n)
        inventories.append((pid, 'DISK_GB', 100000))
        members.append((pid, n))
        sharing.append(pid)
    for n in range(trees):
        root = provider(None, None, 'compute-%d' % n)
        members.append((root, n % SHARING))
        for numa in range(2):
            child = provider(root, root, 'compute-%d-numa%d' % (n, numa))
            inventories.append((child, 'VCPU', 32))
            inventories.append((child, 'MEMORY_MB', 131072))
    return Layout(providers, inventories, members, sharing,
                  [str(uuid.uuid4()) for _ in range(SHARING)])


def _insert(conn, table, rows):
    now = datetime.datetime.utcnow()
    for start in range(0, len(rows), 5000):
        chunk = rows[start:start + 5000]
        if 'created_at' in table.c:
            chunk = [dict(r, created_at=now) for r in chunk]
        conn.execute(sa.insert(table), chunk)


def _finish(conn, sequence):
    if conn.dialect.name == 'postgresql':
        conn.exec_driver_sql("SELECT setval('%s', (SELECT max(id) FROM "
                             "%s))" % sequence)
        conn.exec_driver_sql('ANALYZE')


def load_allocworker(url, data):
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        classes = dict(conn.execute(sa.select(
            schema.resource_classes.c.name,
            schema.resource_classes.c.id)).all())
        shares = conn.execute(sa.select(schema.traits.c.id).where(
            schema.traits.c.name == 'MISC_SHARES_VIA_AGGREGATE')).scalar()
        _insert(conn, schema.providers, [
            {'id': i, 'uuid': u, 'name': n, 'generation': 1,
             'parent_provider_id': p, 'root_provider_id': r}
            for i, u, n, p, r in data.providers])
        _insert(conn, schema.inventories, [
            {'provider_id': p, 'resource_class_id': classes[c],
             'total': t, 'reserved': 0, 'min_unit': 1, 'max_unit': t,
             'step_size': 1, 'allocation_ratio': 1.0, 'forced': False}
            for p, c, t in data.inventories])
        _insert(conn, schema.provider_aggregates, [
            {'provider_id': p, 'aggregate_uuid': data.aggregates[a]}
            for p, a in data.members])
        _insert(conn, schema.provider_traits, [
            {'provider_id': p, 'trait_id': shares} for p in data.sharing])
        _finish(conn, ('providers_id_seq', 'providers'))
    engine.dispose()


def load_placement(url, data):
    """The same rows in Placement 16's tables (which Placement made)."""
    engine = sa.create_engine(url)
    tables = sa.MetaData()
    tables.reflect(engine)
    t = tables.tables
    with engine.begin() as conn:
        classes = dict(conn.execute(sa.select(
            t['resource_classes'].c.name, t['resource_classes'].c.id)).all())
        shares = conn.execute(sa.select(t['traits'].c.id).where(
            t['traits'].c.name == 'MISC_SHARES_VIA_AGGREGATE')).scalar()
        _insert(conn, t['resource_providers'], [
            {'id': i, 'uuid': u, 'name': n, 'generation': 1,
             'parent_provider_id': p, 'root_provider_id': r}
            for i, u, n, p, r in data.providers])
        _insert(conn, t['inventories'], [
            {'resource_provider_id': p, 'resource_class_id': classes[c],
             'total': total, 'reserved': 0, 'min_unit': 1,
             'max_unit': total, 'step_size': 1, 'allocation_ratio': 1.0}
            for p, c, total in data.inventories])
        _insert(conn, t['placement_aggregates'], [
            {'id': n + 1, 'uuid': a} for n, a in enumerate(data.aggregates)])
        _insert(conn, t['resource_provider_aggregates'], [
            {'resource_provider_id': p, 'aggregate_id': a + 1}
            for p, a in data.members])
        _insert(conn, t['resource_provider_traits'], [
            {'resource_provider_id': p, 'trait_id': shares}
            for p in data.sharing])
        _finish(conn, ('resource_providers_id_seq', 'resource_providers'))
    engine.dispose()


def get(base, query):
    request = urllib.request.Request(
        base + '/allocation_candidates?' + query,
        headers={'x-auth-token': 'admin',
                 'openstack-api-version': 'placement 1.36'})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())


def rss_mb(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return None


def drive(name, server, base, pid, calls):
    """The workloads against one server: a row each."""
    rows = []
    for workload, query in WORKLOADS:
        get(base, query)  # warm: imports, caches, connections
        latencies = []
        for _ in range(calls):
            began = time.monotonic()
            body = get(base, query)
            latencies.append((time.monotonic() - began) * 1000)
        latencies.sort()
        rows.append({
            'workload': workload, 'server': server,
            'p50_ms': round(latencies[len(latencies) // 2], 1),
            'p99_ms': round(latencies[min(len(latencies) - 1, int(
                0.99 * len(latencies)))], 1),
            'candidates': len(body['allocation_requests']),
            'summaries': len(body['provider_summaries']),
            'rss_mb': round(rss_mb(pid), 1)})
    return rows


def serve(command, port):
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    base = 'http://127.0.0.1:%d' % port
    services.wait_for_http(base, seconds=120)
    return process, base


def measure_allocworker(backend, data, calls, scratch):
    with services.fresh_database(backend, scratch) as url:
        config = services.write_config(
            os.path.join(scratch, 'bench.conf'), url, 'unused')
        services.manage(config, 'db', 'sync')
        load_allocworker(url, data)
        port = services.free_port()
        with open(config, 'a') as f:
            f.write('[api]\nauth_strategy = noauth2\nport = %d\n' % port)
        api, base = serve([os.path.join(services.BIN, 'allocworker-api'),
                           '--config-file', config], port)
        try:
            return drive('allocworker', 'allocworker', base, api.pid, calls)
        finally:
            api.terminate()
            api.wait(30)


def measure_placement(python, backend, data, calls, scratch):
    folder = os.path.join(scratch, 'placement')
    os.makedirs(folder)
    with services.fresh_database(backend, folder) as url:
        if backend == 'sqlite':
            url = 'sqlite:///%s' % os.path.join(folder, 'placement.sqlite')
        port = services.free_port()
        server, base = serve([python, os.path.join(
            ROOT, 'benchmarks', 'placement_server.py'), str(port), url,
            folder], port)
        try:
            load_placement(url, data)
            return drive('placement', 'placement', base, server.pid, calls)
        finally:
            server.terminate()
            server.wait(30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--trees', type=int, nargs='+',
                        default=[1000, 10000])
    parser.add_argument('--backend', default='postgresql',
                        choices=services.BACKENDS)
    parser.add_argument('--calls', type=int, default=20)
    parser.add_argument('--placement-python',
                        help='an interpreter with openstack-placement (and '
                             'the database driver) installed: measure '
                             'Placement on the same data beside')
    parser.add_argument('--json', action='store_true')
    args = parser.parse_args()
    for trees in args.trees:
        data = layout(trees)
        with tempfile.TemporaryDirectory() as scratch:
            rows = measure_allocworker(args.backend, data, args.calls,
                                       scratch)
            if args.placement_python:
                rows += measure_placement(args.placement_python,
                                          args.backend, data, args.calls,
                                          scratch)
        for row in rows:
            row.update(trees=trees, backend=args.backend)
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                print('%(server)-11s %(workload)-10s %(backend)-10s trees '
                      '%(trees)6d p50 %(p50_ms)8.1f ms  p99 %(p99_ms)8.1f '
                      'ms  candidates %(candidates)5d  summaries '
                      '%(summaries)5d  rss %(rss_mb)6.1f MB' % row,
                      flush=True)


if __name__ == '__main__':
    main()
