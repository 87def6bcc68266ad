"""allocworker benchmarks: throughput, latency and CPU per call against
the broker and database ceilings measured in the same run.

    .venv/bin/python -m benchmarks.run [--workers 2] [--mysql] [--quick]
                                       [--json] [--preload N] [--peers]
                                       [--chart PNG] [--metrics] [--limits]
    .venv/bin/python -m benchmarks.run --candidates-scale 1000,10000

Starts ``allocworker-worker`` (``--workers`` processes) on the real
RabbitMQ and a fresh PostgreSQL (or MariaDB) database, loads providers,
and drives each workload at each concurrency from threads sharing one
oslo.messaging client. Every figure is reported with the ceiling it is
compared to: the no-op RPC round-trip rate (same broker, same number of
server processes) for RPC workloads, items/s of a no-op call carrying 100
items for batches, and the bare commit rate of one allocation-sized
transaction for the database row. The REST shim's row (``PUT
/allocations/{consumer}`` at microversion 1.28, allocworker-api's own
threaded server) is compared with a ``GET /`` round trip to the same
server. Every row carries the CPU time per call (``cpu.py``).

``--peers`` adds Placement 16 and allocworker-api under uWSGI
(``peers.py``), ``--limits`` the allocate rows with project limits off and
on, measured in turns (``limits.py``), ``--chart`` draws throughput
against concurrency (``chart.py``), and ``--candidates-scale`` runs only
the allocation candidates scale benchmark (``candidates.py``) with the
data loaded over HTTP, both servers under uWSGI, on PostgreSQL.
"""

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import chart  # noqa: E402
from benchmarks import cpu  # noqa: E402
from benchmarks.metrics_overhead import MetricsOverhead  # noqa: E402
from benchmarks.load import drive, load, summary  # noqa: E402
from benchmarks import noop_server  # noqa: E402
from benchmarks import peers  # noqa: E402
from benchmarks import sqlwork  # noqa: E402
from tests.functional import jsonhttp  # noqa: E402
from tests.functional import services  # noqa: E402

HOSTS = 50
BATCH = 100


class Bench(object):

    def __init__(self, args, database, scratch):
        self.args = args
        self.database = database
        self.meter = cpu.Meter([database.rsplit('/', 1)[1].split('?')[0]])
        self.peers = self.metered = None
        self.limits = None
        topic = 'aw-bench-%s' % uuid.uuid4().hex[:8]
        config = services.write_config(
            os.path.join(scratch, 'bench.conf'), database, topic,
            workers=args.workers,
            extra='[DEFAULT]\nexecutor_thread_pool_size = %d\n'
            % args.executor_threads)
        services.manage(config, 'db', 'sync')
        self.client = services.BareClient(topic, timeout=120)
        self.worker = services.Worker(config).start(self.client)
        self.noop_topic = topic + '-noop'
        self.noop = noop_server.start(services.RABBIT_URL, self.noop_topic,
                                      args.workers, self.client.client)
        self.hosts = []
        for n in range(HOSTS):
            host = str(uuid.uuid4())
            gen = self.client.create_provider(
                uuid=host, name='bench-%d-%s' % (n, host))['items'][0][
                'generation']
            self.client.set_inventories(
                provider_uuid=host, provider_generation=gen,
                inventories={'VCPU': {'total': 2 ** 31 - 1},
                             'MEMORY_MB': {'total': 2 ** 31 - 1}})
            self.hosts.append(host)
        self.readable = []
        self.rows = []
        self.api = self._start_api(config)

    def _start_api(self, config):
        """allocworker-api (the REST shim) on the same database."""
        port = services.free_port()
        api_config = self.api_config = os.path.join(
            os.path.dirname(config), 'api.conf')
        with open(config) as source, open(api_config, 'w') as target:
            target.write(source.read() + '[api]\nauth_strategy = noauth2\n'
                         'port = %d\n' % port)
        self.api_process = subprocess.Popen(
            [os.path.join(services.BIN, 'allocworker-api'), '--config-file',
             api_config], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        base = 'http://127.0.0.1:%d' % port
        services.wait_for_http(base)
        return base

    def http(self, method, path, body=None):
        status, raw = jsonhttp.request(
            self.api + path, method, body,
            jsonhttp.placement_headers('1.28'), timeout=120)
        if status >= 300:
            raise RuntimeError('%s %s: %d' % (method, path, status))
        return raw

    def put_allocations(self):
        self.http('PUT', '/allocations/%s' % uuid.uuid4(), {
            'allocations': {random.choice(self.hosts): {'resources': {
                'VCPU': 1, 'MEMORY_MB': 512}}},
            'project_id': 'bench', 'user_id': 'bench',
            'consumer_generation': None})

    def start_peers(self, placement_database, scratch):
        self.meter.databases.add(placement_database.rsplit('/', 1)[1])
        self.peers = peers.Peers(self.api_config, placement_database,
                                 scratch, HOSTS)

    def close(self):
        if self.peers:
            self.peers.close()
        if self.metered:
            self.metered.close()
        if self.limits:
            self.limits.close()
        self.api_process.terminate()
        self.api_process.wait()
        for p in self.noop:
            p.terminate()
            p.wait()
        self.worker.stop()

    # -- helpers ----------------------------------------------------------

    def item(self, consumer=None, generation=None):
        return {'consumer_uuid': consumer or str(uuid.uuid4()),
                'consumer_generation': generation,
                'project_id': 'bench', 'user_id': 'bench',
                'allocations': {random.choice(self.hosts): {
                    'VCPU': 1, 'MEMORY_MB': 512}}}

    def check(self, answer):
        if answer['status'] != 200:
            raise RuntimeError('not all items 200: %s' % str(answer)[:300])
        return answer

    def preload(self, count):
        """Store ``count`` allocations first (scale runs): on PostgreSQL
        straight into the tables in one statement per table (spread over
        the providers, as allocate would leave them), elsewhere through
        allocate."""
        if 'postgresql' in self.database:
            return sqlwork.preload(self.database, count, len(self.hosts))
        done = 0
        while done < count:
            n = min(1000, count - done)
            self.check(self.client.allocate(
                items=[self.item() for _ in range(n)], atomic=True))
            done += n

    def drive(self, fn, concurrency, items_per_call=1):
        """``drive`` with the CPU spent meanwhile (``cpu.Meter``)."""
        before = self.meter.snapshot()
        result = drive(fn, concurrency, self.args.seconds, items_per_call)
        return result + (self.meter.spent(before, self.meter.snapshot()),)

    def drive_in_turns(self, first, second, concurrency):
        """Two workloads that are compared, measured in turns (first,
        second, second, first; half of ``--seconds`` each) so that a change
        in the machine's load falls on both alike; a ``drive`` result for
        each."""
        runs = {first: [[], [], 0.0, []], second: [[], [], 0.0, []]}
        for fn in (first, second, second, first):
            before = self.meter.snapshot()
            latencies, errors, elapsed = load(fn, concurrency,
                                              self.args.seconds / 2)
            spent = self.meter.spent(before, self.meter.snapshot())
            total = runs[fn]
            total[0].extend(latencies)
            total[1].extend(errors)
            total[2] += elapsed
            total[3].append(spent)
        return [summary(*runs[fn][:3]) + ({
            part: sum(s[part] for s in runs[fn][3])
            for part in runs[fn][3][0]},) for fn in (first, second)]

    def record(self, workload, concurrency, result, ceiling, unit='calls'):
        per_s, p50, p99, errors, items, spent = result
        # The ratio is of the printed figures, so every row checks out.
        per_s, ceiling = round(per_s, 1), ceiling and round(ceiling, 1)
        per_item = {part: round(seconds * 1000 / max(items, 1), 3)
                    for part, seconds in spent.items()}
        row = {'workload': workload, 'concurrency': concurrency,
               'per_s': per_s, 'p50_ms': round(p50, 2),
               'p99_ms': round(p99, 2),
               'ceiling_per_s': ceiling or None,
               'ratio': round(per_s / ceiling, 3) if ceiling else None,
               'unit': unit, 'errors': len(errors),
               'cpu_ms': per_item.pop('machine'),
               'cpu_ms_own': per_item.pop('own'), 'cpu_ms_parts': per_item}
        # CPU per call (item) as a multiple of the ceiling's, both of the
        # run's own processes: the figure that moves least between
        # machines of different speed.
        base = next((r for r in reversed(self.rows)
                     if r['concurrency'] == concurrency and ceiling and
                     r['per_s'] == ceiling), None)
        row['cpu_x_ceiling'] = round(
            row['cpu_ms_own'] / base['cpu_ms_own'], 2) \
            if base and base['cpu_ms_own'] else None
        self.rows.append(row)
        if self.args.json:
            print(json.dumps(row), flush=True)
        else:
            print('%-30s c=%-3d %10.1f %-5s/s p50 %7.2f p99 %7.2f ms'
                  '  ceiling %9s ratio %6s  cpu/%s %6.3f own %6.3f ms'
                  ' (x%s)%s'
                  % (workload, concurrency, per_s, unit, p50, p99,
                     row['ceiling_per_s'], row['ratio'], unit[:-1],
                     row['cpu_ms'], row['cpu_ms_own'], row['cpu_x_ceiling'],
                     '  ERRORS %d: %s' % (len(errors), errors[0])
                     if errors else ''), flush=True)
        return per_s

    # -- ceilings ----------------------------------------------------------

    def noop_call(self, arg):
        return self.client.client.prepare(topic=self.noop_topic).call(
            {}, 'echo', arg=arg)

    def db_ceiling(self, concurrency):
        engine, one_transaction = sqlwork.commit_ceiling(self.database,
                                                         concurrency)
        try:
            return self.drive(one_transaction, concurrency)
        finally:
            engine.dispose()

    # -- the run -------------------------------------------------------------

    def wanted(self, workload):
        only = self.args.only
        return not only or any(workload.startswith(w) for w in only)

    def run(self):
        client = self.client
        for c in self.args.concurrency:
            noop = self.record('noop_rpc_roundtrip', c, self.drive(
                lambda: self.noop_call(1), c), None)
            payload = [self.item() for _ in range(BATCH)]
            noop_batch = self.record('noop_rpc_100_items', c, self.drive(
                lambda: self.noop_call(payload), c, BATCH), None, 'items')
            if self.wanted('db_commit'):
                self.record('db_commit', c, self.db_ceiling(c), None,
                            'txns')
            if self.wanted('allocate_single'):
                self.record('allocate_single', c, self.drive(
                    lambda: self.check(client.allocate(
                        items=[self.item()])), c), noop)
            if self.metered:
                self.metered.run(c)
            for atomic in (False, True):
                name = 'allocate_batch_100_%s' % ('atomic' if atomic
                                                  else 'independent')
                if self.wanted(name):
                    self.record(name, c, self.drive(
                        lambda: self.check(client.allocate(
                            items=[self.item() for _ in range(BATCH)],
                            atomic=atomic)), c, BATCH), noop_batch, 'items')
            if not self.readable:
                answer = self.check(client.allocate(
                    items=[self.item() for _ in range(200)]))
                self.readable = [i['consumer_uuid'] for i in answer['items']]
            if self.wanted('get_allocations_one'):
                self.record('get_allocations_one', c, self.drive(
                    lambda: self.check(client.get_allocations(
                        consumer_uuids=[random.choice(self.readable)])), c),
                    noop)
            if self.wanted('mixed_70w_30r'):
                self.record('mixed_70w_30r', c, self.drive(self.mixed, c),
                            noop)
            if self.wanted('http'):
                noop_http = self.record('noop_http_roundtrip', c,
                                        self.drive(lambda: self.http(
                                            'GET', '/'), c), None)
                self.record('http_put_allocations', c, self.drive(
                    self.put_allocations, c), noop_http)
            if self.peers:
                self.peers.run(self, c)
            if self.limits:
                self.limits.run(c)

    def mixed(self):
        if random.random() < 0.3:
            self.check(self.client.get_allocations(
                consumer_uuids=[random.choice(self.readable)]))
        elif random.random() < 0.5 and len(self.readable) > 100:
            consumer = self.readable.pop()
            current = self.client.get_allocations(
                consumer_uuids=[consumer])['items'][0]
            if current['status'] == 200:
                self.check(self.client.allocate(items=[self.item(
                    consumer, current['consumer_generation'])]))
                self.readable.insert(0, consumer)
        else:
            answer = self.check(self.client.allocate(items=[self.item()]))
            self.readable.append(answer['items'][0]['consumer_uuid'])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--mysql', action='store_true',
                        help='MariaDB instead of PostgreSQL')
    parser.add_argument('--quick', action='store_true',
                        help='concurrency 1 and 16, 2 s per figure')
    parser.add_argument('--seconds', type=float, default=10.0,
                        help='measuring time per figure')
    parser.add_argument('--concurrency', default='1,4,16,64')
    parser.add_argument('--executor-threads', type=int, default=64,
                        help="each worker's [DEFAULT] "
                        'executor_thread_pool_size (oslo.messaging: 64)')
    parser.add_argument('--only', type=lambda v: v.split(','), default=[],
                        help='only these workloads (name prefixes, comma '
                        'separated), beside the RPC ceilings')
    parser.add_argument('--preload', type=int, default=0,
                        help='allocations stored before measuring')
    parser.add_argument('--json', action='store_true',
                        help='one JSON object per row')
    parser.add_argument('--peers', action='store_true',
                        help='also Placement 16 and allocworker-api under '
                        'uWSGI (installed on first use)')
    parser.add_argument('--metrics', action='store_true',
                        help='also the single allocate with metrics on '
                        'and off, in turns (metrics_overhead.py)')
    parser.add_argument('--limits', action='store_true',
                        help='also allocate with project limits on, beside '
                        'the same rows with them off (limits.py; a real '
                        'Keystone, installed on first use)')
    parser.add_argument('--chart', metavar='PNG',
                        help='draw throughput against concurrency')
    parser.add_argument('--candidates-scale', metavar='TREES',
                        help='only the allocation-candidates scale '
                        'scenario, e.g. 1000,10000 (needs no worker)')
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds = min(args.seconds, 2.0)
        args.concurrency = '1,16' if args.concurrency == '1,4,16,64' \
            else args.concurrency
    args.concurrency = [int(c) for c in args.concurrency.split(',')]
    from oslo_config import cfg
    cfg.CONF([], project='allocworker-bench')
    subprocess.run([os.path.join(ROOT, 'tools', 'ensure-services.sh')],
                   check=True)
    if args.candidates_scale:
        from benchmarks import candidates
        return candidates.main(
            ['--load', 'http', '--serve', 'uwsgi', '--backend',
             'postgresql', '--seconds', str(max(args.seconds, 1.0)),
             '--trees'] + args.candidates_scale.split(',') +
            (['--json'] if args.json else []))
    backend = 'mysql' if args.mysql else 'postgresql'
    with tempfile.TemporaryDirectory() as scratch, \
            contextlib.ExitStack() as stack:
        database = stack.enter_context(
            services.fresh_database(backend, scratch))
        bench = Bench(args, database, scratch)
        try:
            if args.peers:
                bench.start_peers(stack.enter_context(
                    services.fresh_database('postgresql', scratch)), scratch)
            if args.metrics:
                bench.metered = MetricsOverhead(bench, scratch)
            if args.limits:
                from benchmarks import limits
                bench.limits = limits.Limits(bench, scratch)
            if args.preload:
                started = time.monotonic()
                bench.preload(args.preload)
                print('# preloaded %d allocations in %.0f s'
                      % (args.preload, time.monotonic() - started),
                      file=sys.stderr)
            bench.run()
        finally:
            bench.close()
    if args.chart:
        chart.draw(bench.rows, args.chart, args)
    return 1 if any(r['errors'] for r in bench.rows) else 0


if __name__ == '__main__':
    sys.exit(main())
