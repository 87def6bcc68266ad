"""Claims against the two-step pattern a scheduler uses without them.

    .venv/bin/python -m benchmarks.claims [--backend postgresql|mysql|sqlite]
                                          [--workers 2] [--seconds 5]

Starts ``allocworker-worker`` on the real RabbitMQ and a fresh database
and prints, as JSON lines:

- ``claim`` and single-item ``allocate`` calls per second at concurrency
  1 and 16 (one new consumer per call, 1 unit of a class offered by 50
  roomy hosts; ``claim`` chooses the host, ``allocate`` names a random
  one);
- a boot storm: 64 consumers at once for exactly 64 slots over 16 hosts,
  placed by ``claim``, and placed by ``get_allocation_candidates`` then
  ``allocate`` of the best candidate (most free first, as a weigher
  would), retried on 409 with a fresh read, counting conflicts and
  retries per placed consumer.
"""

import argparse
from concurrent import futures
import json
import os
import sys
import tempfile
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.functional import services  # noqa: E402


def _one(answer):
    return answer['items'][0]


def _class(rpc):
    name = 'CUSTOM_BENCH_%s' % uuid.uuid4().hex[:10].upper()
    rpc.create_resource_class(name=name)
    return name


def _hosts(rpc, name, count, total):
    made = []
    for _ in range(count):
        host = str(uuid.uuid4())
        item = _one(rpc.create_provider(uuid=host, name='h-' + host))
        rpc.set_inventories(provider_uuid=host,
                            provider_generation=item['generation'],
                            inventories={name: {'total': total}})
        made.append(host)
    return made


def new_consumer_item(consumer, **fields):
    """An allocate or claim item for a new consumer of project bench."""
    return dict({'consumer_uuid': consumer, 'consumer_generation': None,
                 'project_id': 'bench', 'user_id': 'bench'}, **fields)


def _rate(call, concurrency, seconds):
    """Calls per second (and failures) of ``call`` from threads."""
    stop = time.monotonic() + seconds
    counts = []

    def loop():
        done = failed = 0
        while time.monotonic() < stop:
            if _one(call())['status'] != 200:
                failed += 1
            done += 1
        counts.append((done, failed))

    threads = [threading.Thread(target=loop) for _ in range(concurrency)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    return (round(sum(d for d, _ in counts) / elapsed, 1),
            sum(f for _, f in counts))


def throughput(rpc, seconds):
    name = _class(rpc)
    hosts = _hosts(rpc, name, 50, 1000000)
    request = {'groups': [{'resources': {name: 1}}]}
    counter = iter(range(10 ** 9))
    calls = {
        'allocate': lambda: rpc.allocate(items=[new_consumer_item(
            str(uuid.uuid4()),
            allocations={hosts[next(counter) % 50]: {name: 1}})]),
        'claim': lambda: rpc.claim(items=[new_consumer_item(
            str(uuid.uuid4()), request=request)]),
    }
    for call_name, call in calls.items():
        for concurrency in (1, 16):
            rate, failed = _rate(call, concurrency, seconds)
            yield {'row': call_name, 'concurrency': concurrency,
                   'calls_per_s': rate, 'failed': failed}


def _storm(place):
    with futures.ThreadPoolExecutor(64) as pool:
        started = time.monotonic()
        outcomes = list(pool.map(place, [str(uuid.uuid4())
                                         for _ in range(64)]))
    return outcomes, time.monotonic() - started


def _outcomes(outcomes):
    """{outcome: count} of what the storm's consumers got."""
    counted = {}
    for outcome in outcomes:
        counted[str(outcome)] = counted.get(str(outcome), 0) + 1
    return counted


def storm_by_claims(rpc):
    name = _class(rpc)
    _hosts(rpc, name, 16, 4)
    request = {'groups': [{'resources': {name: 1}}]}
    outcomes, elapsed = _storm(lambda c: _one(rpc.claim(
        items=[new_consumer_item(c, request=request)])).get('code', 200))
    return {'row': 'storm claim', 'placed': outcomes.count(200),
            'conflicts': outcomes.count('capacity.exceeded'), 'retries': 0,
            'outcomes': _outcomes(outcomes),
            'seconds': round(elapsed, 2)}


def storm_by_two_steps(rpc, attempts=64):
    name = _class(rpc)
    _hosts(rpc, name, 16, 4)
    request = {'groups': [{'resources': {name: 1}}]}
    lock = threading.Lock()
    totals = {'conflicts': 0, 'retries': 0}

    def place(consumer):
        for attempt in range(attempts):
            found = rpc.get_allocation_candidates(request=request)['items']
            if not found:
                return 'nothing'
            best = max(found, key=lambda c: (
                sum(p['capacity'][name] - p['used'].get(name, 0)
                    for p in c['providers'].values()), c['root_uuid']))
            item = _one(rpc.allocate(items=[new_consumer_item(
                consumer, allocations=best['allocations'])]))
            if item['status'] == 200:
                with lock:
                    totals['retries'] += attempt
                return 200
            if item['status'] != 409:
                return item.get('code')
            with lock:
                totals['conflicts'] += 1
        return 'gave up'

    outcomes, elapsed = _storm(place)
    placed = outcomes.count(200)
    return {'row': 'storm candidates+allocate', 'placed': placed,
            'conflicts': totals['conflicts'], 'retries': totals['retries'],
            'conflicts_per_placed': round(totals['conflicts'] / placed, 2)
            if placed else None, 'outcomes': _outcomes(outcomes),
            'seconds': round(elapsed, 2)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--backend', default='postgresql',
                        choices=services.BACKENDS)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--seconds', type=float, default=5)
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix='aw-bench-claims-')
    topic = 'aw-bench-%s' % uuid.uuid4().hex[:8]
    with services.fresh_database(args.backend, scratch) as url:
        # 64 calls at once queue for 5 + 10 pooled connections a process
        # rather than exhaust a shared server's max_connections.
        config = services.write_config(
            os.path.join(scratch, 'worker.conf'), url, topic,
            workers=args.workers, extra='[database]\nmax_overflow = 10\n')
        services.manage(config, 'db', 'sync')
        rpc = services.BareClient(topic, timeout=120)
        worker = services.Worker(config).start(rpc)
        try:
            for row in throughput(rpc, args.seconds):
                print(json.dumps(row), flush=True)
            print(json.dumps(storm_by_claims(rpc)), flush=True)
            print(json.dumps(storm_by_two_steps(rpc)), flush=True)
        finally:
            worker.stop()


if __name__ == '__main__':
    main()
