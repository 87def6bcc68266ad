"""Wide trees: hosts of 8 device children and a request of 8 isolated
groups (Placement bug 2126751), over RPC.

    .venv/bin/python -m benchmarks.wide_trees [--hosts 200] [--calls 30]
        [--backend postgresql] [--workers 2]

Bulk-loads ``--hosts`` roots with 8 children of one VGPU each into a
fresh database, then measures ``get_allocation_candidates`` with
``limit=1000`` and single claims (each takes a whole host) at c=1:
p50/p99 and the worker's CPU per call. (Placement's figure for the same
request is not measured here: at 200 such hosts it enumerates 8^8
combinations per host.)
"""

import argparse
import json
import os
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import candidates_cloud as cloud  # noqa: E402
from benchmarks import claims  # noqa: E402
from benchmarks import cpu  # noqa: E402
from benchmarks import load  # noqa: E402
from tests.functional import services  # noqa: E402

DEVICES = 8
REQUEST = {'groups': [{'resources': {'VGPU': 1}} for _ in range(DEVICES)],
           'group_policy': 'isolate'}


def rows(hosts):
    providers, inventories = [], []
    for host in range(hosts):
        root = host * (DEVICES + 1) + 1
        providers.append((root, str(uuid.uuid4()), 'wide-%d' % host, None,
                          root))
        for device in range(DEVICES):
            child = root + device + 1
            providers.append((child, str(uuid.uuid4()),
                              'wide-%d-gpu%d' % (host, device), root, root))
            inventories.append((child, 'VGPU', 1))
    return providers, inventories, []


def measure(meter, call, calls):
    latencies, statuses = [], []
    before = meter.snapshot()
    for _ in range(calls):
        started = time.monotonic()
        statuses.append(call())
        latencies.append(time.monotonic() - started)
    spent = meter.spent(before, meter.snapshot())
    return {'p50_ms': round(1000 * load.percentile(latencies, 0.5), 1),
            'p99_ms': round(1000 * load.percentile(latencies, 0.99), 1),
            'worker_cpu_ms': round(1000 * spent['servers'] / calls, 1),
            'db_cpu_ms': round(1000 * spent['database'] / calls, 1),
            'calls': calls, 'statuses': sorted(set(statuses))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, default=200)
    parser.add_argument('--calls', type=int, default=30)
    parser.add_argument('--backend', default='postgresql',
                        choices=services.BACKENDS)
    parser.add_argument('--workers', type=int, default=2)
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix='aw-bench-wide-')
    topic = 'aw-bench-%s' % uuid.uuid4().hex[:8]
    with services.fresh_database(args.backend, scratch) as url:
        config = services.write_config(
            os.path.join(scratch, 'worker.conf'), url, topic,
            workers=args.workers)
        services.manage(config, 'db', 'sync')
        loader = cloud.BulkLoader(url, placement=False)
        loader.load(rows(args.hosts))
        loader.close()
        rpc = services.BareClient(topic, timeout=120)
        worker = services.Worker(config).start(rpc)
        meter = cpu.Meter([url.rsplit('/', 1)[1].split('?')[0]])
        try:
            found = []

            def candidates():
                answer = rpc.get_allocation_candidates(request=REQUEST,
                                                       limit=1000)
                found.append(len(answer['items']))
                return answer['status']

            def claim():
                return rpc.claim(items=[claims.new_consumer_item(
                    str(uuid.uuid4()), request=REQUEST)])['items'][0][
                        'status']

            candidates()
            row = measure(meter, candidates, args.calls)
            print(json.dumps(dict(row, row='candidates limit=1000',
                                  hosts=args.hosts,
                                  candidates=max(found))), flush=True)
            row = measure(meter, claim, min(args.calls, args.hosts - 1))
            print(json.dumps(dict(row, row='claim', hosts=args.hosts)),
                  flush=True)
        finally:
            worker.stop()


if __name__ == '__main__':
    main()
