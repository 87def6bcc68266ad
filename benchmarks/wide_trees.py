"""Wide trees: hosts of 8 device children and a request of 8 isolated
groups (Placement bug 2126751), over RPC and over Placement's HTTP API.

    .venv/bin/python -m benchmarks.wide_trees [--hosts 200] [--calls 30]
        [--backend postgresql] [--workers 2] [--no-placement]

Bulk-loads ``--hosts`` roots with 8 children of one VGPU each into a
fresh database, then measures at c=1, p50/p99 and CPU per call:

- ``get_allocation_candidates`` with ``limit=1000`` over RPC, and beside
  it the RPC ceiling for an answer of the same size: a bare
  oslo.messaging server (``noop_server``) answering the same candidates
  (about 1.7 MB: the contract gives each candidate its providers'
  summaries);
- ``GET /allocation_candidates`` with the same request and ``limit``
  from allocworker-api under uWSGI (Placement's install-guide settings,
  ``peers.py``), microversion 1.36;
- single claims (each takes a whole host);
- Placement 16 under uWSGI, on a fresh database of its own with the same
  hosts, asked the same ``GET`` (unless ``--no-placement``): it builds
  every combination of a host's devices, so it gets ``--placement-calls``
  tries, each cut off where uWSGI's HTTP router gives up on it (its
  ``http-timeout``, 60 s by default; no harakiri is configured).
"""

import argparse
import contextlib
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
from benchmarks import noop_server  # noqa: E402
from benchmarks import peers  # noqa: E402
from tests.functional import services  # noqa: E402

DEVICES = 8
REQUEST = {'groups': [{'resources': {'VGPU': 1}} for _ in range(DEVICES)],
           'group_policy': 'isolate'}
QUERY = '&'.join('resources%d=VGPU:1' % (n + 1) for n in range(DEVICES)) + \
    '&group_policy=isolate&limit=1000'
VERSION = '1.36'


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
            'servers_cpu_ms': round(1000 * spent['servers'] / calls, 1),
            'db_cpu_ms': round(1000 * spent['database'] / calls, 1),
            'rabbitmq_cpu_ms': round(1000 * spent['rabbitmq'] / calls, 1),
            'calls': calls, 'statuses': sorted(set(statuses))}


def placement_row(args, scratch):
    """Placement 16 asked the same GET: its p50, or how long it took to
    give up."""
    with services.fresh_database(args.backend, scratch) as url:
        server = peers.start_placement(url, scratch)
        try:
            loader = cloud.BulkLoader(url, placement=True)
            loader.load(rows(args.hosts))
            loader.close()
            peer = peers.HttpPeer(server, version=VERSION)
            latencies, outcomes = [], []
            for _ in range(args.placement_calls):
                started = time.monotonic()
                try:
                    status, body = peer.call(
                        'GET', '/allocation_candidates?' + QUERY)
                    outcomes.append('%d, %d candidates' % (
                        status, len(body['allocation_requests'])))
                except Exception as error:  # the router's timeout
                    outcomes.append('no answer: %s' % str(error)[:80])
                latencies.append(time.monotonic() - started)
            return {'p50_ms': round(1000 * load.percentile(latencies, 0.5),
                                    1),
                    'calls': len(latencies),
                    'outcomes': sorted(set(outcomes))}
        finally:
            server.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, default=200)
    parser.add_argument('--calls', type=int, default=30)
    parser.add_argument('--backend', default='postgresql',
                        choices=services.BACKENDS)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--no-placement', action='store_true')
    parser.add_argument('--placement-calls', type=int, default=2)
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix='aw-bench-wide-')
    topic = 'aw-bench-%s' % uuid.uuid4().hex[:8]

    def report(figures, **fields):
        print(json.dumps(dict(figures, hosts=args.hosts, **fields)),
              flush=True)

    with contextlib.ExitStack() as stack:
        url = stack.enter_context(services.fresh_database(args.backend,
                                                          scratch))
        config = services.write_config(
            os.path.join(scratch, 'worker.conf'), url, topic,
            workers=args.workers)
        services.manage(config, 'db', 'sync')
        loader = cloud.BulkLoader(url, placement=False)
        loader.load(rows(args.hosts))
        loader.close()
        rpc = services.BareClient(topic, timeout=120)
        worker = services.Worker(config).start(rpc)
        stack.callback(worker.stop)
        noop, = noop_server.start(services.RABBIT_URL, topic + '-noop', 1,
                                  rpc.client)
        stack.callback(noop.terminate)
        ceiling = rpc.client.prepare(topic=topic + '-noop', timeout=120)
        api_config = services.write_config(
            os.path.join(scratch, 'api.conf'), url, topic,
            extra='[api]\nauth_strategy = noauth2\n')
        api = peers.start_allocworker_api(api_config, scratch)
        stack.callback(api.stop)
        http = peers.HttpPeer(api, version=VERSION)
        meter = cpu.Meter([url.rsplit('/', 1)[1].split('?')[0]])
        answers = []

        def candidates():
            answer = rpc.get_allocation_candidates(request=REQUEST,
                                                   limit=1000)
            answers.append(answer)
            return answer['status']

        def bare():
            return ceiling.call({}, 'kept')['status']

        def shim():
            status, body = http.call('GET', '/allocation_candidates?' +
                                     QUERY)
            answers.append(body)
            return status

        def claim():
            return rpc.claim(items=[claims.new_consumer_item(
                str(uuid.uuid4()), request=REQUEST)])['items'][0][
                    'status']

        candidates()
        report(measure(meter, candidates, args.calls),
               row='candidates limit=1000, RPC',
               candidates=len(answers[-1]['items']),
               answer_bytes=len(json.dumps(answers[-1])))
        ceiling.call({}, 'keep', arg=answers[-1])
        bare()
        report(measure(meter, bare, args.calls),
               row='ceiling: bare RPC answering the same candidates')
        shim()
        report(measure(meter, shim, args.calls),
               row='GET /allocation_candidates limit=1000, allocworker-api',
               candidates=len(answers[-1]['allocation_requests']),
               answer_bytes=len(json.dumps(answers[-1])))
        report(measure(meter, claim, min(args.calls, args.hosts - 1)),
               row='claim')
    if not args.no_placement:
        report(placement_row(args, scratch),
               row='GET /allocation_candidates limit=1000, Placement 16')


if __name__ == '__main__':
    main()
