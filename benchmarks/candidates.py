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

Rows: ``workload, trees, p50_ms, p99_ms, candidates, api_rss_mb`` (the
API process's resident memory after the calls, to see it stay flat).
"""

import argparse
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
]


def load(url, trees):
    """Bulk rows: trees of a root and two NUMA children, sharing disk."""
    engine = sa.create_engine(url)
    now = datetime.datetime.utcnow()
    with engine.begin() as conn:
        ids = dict(conn.execute(sa.select(
            schema.resource_classes.c.name,
            schema.resource_classes.c.id)).all())
        sharing_trait = conn.execute(sa.select(schema.traits.c.id).where(
            schema.traits.c.name == 'MISC_SHARES_VIA_AGGREGATE')).scalar()
        aggs = [str(uuid.uuid4()) for _ in range(SHARING)]
        providers, inventories, members, flags = [], [], [], []
        next_id = 1

        def provider(parent, root, name):
            nonlocal next_id
            pid = next_id
            next_id += 1
            providers.append({
                'id': pid, 'uuid': str(uuid.uuid4()), 'name': name,
                'generation': 1, 'parent_provider_id': parent,
                'root_provider_id': root or pid})
            return pid

        def inventory(pid, name, total):
            inventories.append({
                'provider_id': pid, 'resource_class_id': ids[name],
                'total': total, 'reserved': 0, 'min_unit': 1,
                'max_unit': total, 'step_size': 1, 'allocation_ratio': 1.0,
                'forced': False})

        for n in range(SHARING):
            pid = provider(None, None, 'storage-%d' % n)
            inventory(pid, 'DISK_GB', 100000)
            members.append({'provider_id': pid, 'aggregate_uuid': aggs[n]})
            flags.append({'provider_id': pid, 'trait_id': sharing_trait})
        for n in range(trees):
            root = provider(None, None, 'compute-%d' % n)
            members.append({'provider_id': root,
                            'aggregate_uuid': aggs[n % SHARING]})
            for numa in range(2):
                child = provider(root, root, 'compute-%d-numa%d' % (n, numa))
                inventory(child, 'VCPU', 32)
                inventory(child, 'MEMORY_MB', 131072)
        for table, rows in ((schema.providers, providers),
                            (schema.inventories, inventories),
                            (schema.provider_aggregates, members),
                            (schema.provider_traits, flags)):
            for start in range(0, len(rows), 5000):
                chunk = rows[start:start + 5000]
                if 'created_at' in table.c:
                    chunk = [dict(r, created_at=now) for r in chunk]
                conn.execute(sa.insert(table), chunk)
        if engine.dialect.name == 'postgresql':
            conn.exec_driver_sql(
                "SELECT setval('providers_id_seq', %d)" % next_id)
            conn.exec_driver_sql('ANALYZE')
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


def measure(backend, trees, calls, scratch):
    rows = []
    with services.fresh_database(backend, scratch) as url:
        config = services.write_config(
            os.path.join(scratch, 'bench.conf'), url, 'unused')
        services.manage(config, 'db', 'sync')
        started = time.monotonic()
        load(url, trees)
        loaded = time.monotonic() - started
        port = services.free_port()
        with open(config, 'a') as f:
            f.write('[api]\nauth_strategy = noauth2\nport = %d\n' % port)
        api = subprocess.Popen(
            [os.path.join(services.BIN, 'allocworker-api'), '--config-file',
             config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            base = 'http://127.0.0.1:%d' % port
            services.wait_for_http(base)
            for name, query in WORKLOADS:
                get(base, query)  # warm: imports, caches, connections
                latencies = []
                for _ in range(calls):
                    began = time.monotonic()
                    body = get(base, query)
                    latencies.append((time.monotonic() - began) * 1000)
                latencies.sort()
                rows.append({
                    'workload': name, 'backend': backend, 'trees': trees,
                    'p50_ms': round(latencies[len(latencies) // 2], 1),
                    'p99_ms': round(latencies[min(len(latencies) - 1, int(
                        0.99 * len(latencies)))], 1),
                    'candidates': len(body['allocation_requests']),
                    'summaries': len(body['provider_summaries']),
                    'api_rss_mb': round(rss_mb(api.pid), 1),
                    'load_s': round(loaded, 1)})
        finally:
            api.terminate()
            api.wait(30)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--trees', type=int, nargs='+',
                        default=[1000, 10000])
    parser.add_argument('--backend', default='postgresql',
                        choices=services.BACKENDS)
    parser.add_argument('--calls', type=int, default=20)
    parser.add_argument('--json', action='store_true')
    args = parser.parse_args()
    for trees in args.trees:
        with tempfile.TemporaryDirectory() as scratch:
            for row in measure(args.backend, trees, args.calls, scratch):
                if args.json:
                    print(json.dumps(row), flush=True)
                else:
                    print('%(workload)-10s %(backend)-10s trees %(trees)6d '
                          'p50 %(p50_ms)8.1f ms  p99 %(p99_ms)8.1f ms  '
                          'candidates %(candidates)5d  summaries '
                          '%(summaries)5d  api rss %(api_rss_mb)6.1f MB'
                          % row, flush=True)


if __name__ == '__main__':
    main()
