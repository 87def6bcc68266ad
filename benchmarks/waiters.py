"""Parked waiters: what 10,000 parked ``wait_for_events`` calls cost the
writes beside them, and how soon events stored elsewhere wake them.

    .venv/bin/python -m benchmarks.waiters [--backend postgresql]
        [--workers 2] [--waiters 10000] [--seconds 10]
        [--concurrency 8] [--wake-rate 500]
        [--out benchmarks/results/waiters.json]

Starts two ``allocworker-worker`` services (``--workers`` processes
each, topics of their own) on the real RabbitMQ and one fresh database:
``parked``, whose process 0 will hold the waits, and ``none``, a peer
that never holds any. Single-item ``allocate`` calls (on one of 50 roomy
hosts) are driven at ``--concurrency`` against each service in turn, 2 s
at a time, until each had ``--seconds``, so both see the same moments of
a shared machine. Every allocate goes to process 0 of its service
(oslo.messaging ``server=<topic>.0``, not the topic, which would hand
half of them to process 1): in ``parked`` the process that holds the
waits, in ``none`` its counterpart, one process against one. Once the
waits are parked, ``parked``'s allocates write the awaited consumers
(one each, new, until they run out; then new ones), so the writes whose
consumers are awaited land in the process holding their waiters;
``none``'s write new consumers. Each allocate row says, under
``writes_to``, which process of which service took the writes and how
many wrote an awaited consumer. Prints, as JSON lines:

- ``allocate, nothing parked``: calls/s, p50, p99 and worker CPU per call
  (every process of the service) of each service, and their ratio
  (parked / none: how alike the two processes 0 are);
- ``idle worker ms/s``: each service's CPU while nothing is asked of it;
- ``park``: ``--waiters`` waits (one event of its own consumer each,
  timeout 240 s) parked in process 0 of ``parked``, how long parking
  took, that process's threads and resident memory before and after;
- ``idle worker ms/s, N parked`` and ``allocate, N parked``: the same
  with them parked; the ratio is the target's (>= 0.9);
- ``wake``: the events stored through process 1 of ``parked`` (the
  one that holds no wait: the wake crosses processes, through the
  database, as the target asks; ``stored_through`` says so), 50 a call
  at ``--wake-rate`` events/s: each waiter's latency from the return of
  the call that stored its event to its own answer (p50, p99, max).

The rows go to ``--out`` too, a result file (``results.py``).

One client process drives all of it; each parked call is a thread of
this process blocked in oslo.messaging's ``call`` (small stacks).
"""

import argparse
import gc
import json
import logging
import os
import sys
import tempfile
import threading
import time
import uuid

import psutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import cpu  # noqa: E402
from benchmarks import load  # noqa: E402
from benchmarks import results  # noqa: E402
from tests.functional import services  # noqa: E402

WAIT_TIMEOUT = 240
OUT = os.path.join('benchmarks', 'results', 'waiters.json')
WORKER_EXTRA = '''
[DEFAULT]
rpc_response_timeout = 300
[database]
max_overflow = 10
[events]
max_wait_seconds = %d
''' % WAIT_TIMEOUT


def _one(answer):
    return answer['items'][0]


def _hosts(rpc, count=50):
    name = 'CUSTOM_BENCH_%s' % uuid.uuid4().hex[:10].upper()
    rpc.create_resource_class(name=name)
    hosts = []
    for _ in range(count):
        host = str(uuid.uuid4())
        item = _one(rpc.create_provider(uuid=host, name='h-' + host))
        rpc.set_inventories(provider_uuid=host,
                            provider_generation=item['generation'],
                            inventories={name: {'total': 10 ** 8}})
        hosts.append(host)
    return name, hosts


def _worker_pids(worker):
    # Children in the order they were started: process 0 first.
    return sorted(worker.child_pids())


def _threads(pid):
    return psutil.Process(pid).num_threads()


def _quiet(pid, most=0.1, seconds=60):
    """Until ``pid`` spends under ``most`` of a CPU over a second."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        before = cpu.process_seconds(pid)
        time.sleep(1)
        if cpu.process_seconds(pid) - before < most:
            return


def _rss_mib(pid):
    return round(cpu.rss_bytes([pid])[0] / 2 ** 20, 1)


class Allocates(object):
    """Single-item allocates on 50 roomy hosts, each a consumer not
    written before, all to one worker process (``server``): the
    consumers ``aim`` gave first, then new ones."""

    def __init__(self, rpc, server, name, hosts, pids, args):
        self.rpc, self.server, self.name = rpc, server, name
        self.hosts, self.pids, self.args = hosts, pids, args
        self.counter = iter(range(10 ** 9))
        self.lock = threading.Lock()
        self.aim([])

    def aim(self, awaited):
        """Write the consumers ``awaited`` before new ones."""
        self.given = iter(list(awaited))
        self.written = {'awaited': 0, 'new': 0}

    def writes_to(self, holds):
        """Where the writes since ``aim`` went, for a row."""
        return dict({'server': self.server, 'process': int(
            self.server.rsplit('.', 1)[1]), 'holds': holds},
            **{'consumers_%s' % k: v for k, v in self.written.items()})

    def call(self):
        host = self.hosts[next(self.counter) % len(self.hosts)]
        with self.lock:
            consumer = next(self.given, None)
            self.written['awaited' if consumer else 'new'] += 1
        item = _one(self.rpc.call('allocate', server=self.server, items=[{
            'consumer_uuid': consumer or str(uuid.uuid4()),
            'consumer_generation': None,
            'project_id': 'bench', 'user_id': 'bench',
            'allocations': {host: {self.name: 1}}}]))
        if item['status'] != 200:
            raise RuntimeError('allocate answered %s' % item)

    def cpu_seconds(self):
        return sum(cpu.process_seconds(pid) for pid in self.pids)


def interleaved(sets, args, window=2.0):
    """Each of ``sets`` (name: Allocates) driven in turn for ``window``
    seconds until each had ``args.seconds``: {name: figures}."""
    taken = {name: ([], [], 0.0, 0.0) for name in sets}
    for _ in range(max(1, int(round(args.seconds / window)))):
        for name, allocates in sets.items():
            spent = allocates.cpu_seconds()
            latencies, errors, elapsed = load.load(
                allocates.call, args.concurrency, window)
            spent = allocates.cpu_seconds() - spent
            lat, err, total, cpu_s = taken[name]
            taken[name] = (lat + latencies, err + errors, total + elapsed,
                           cpu_s + spent)
    figures = {}
    for name, (latencies, errors, elapsed, spent) in taken.items():
        rate, p50, p99, errors, calls = load.summary(latencies, errors,
                                                     elapsed)
        figures[name] = {
            'calls_per_s': round(rate, 1), 'p50_ms': round(p50, 2),
            'p99_ms': round(p99, 2), 'errors': len(errors),
            'worker_cpu_ms_per_call': round(spent * 1000 / max(calls, 1),
                                            2)}
    return figures


class Waiters(object):
    """``count`` parked calls, one thread each, and when each answered."""

    def __init__(self, rpc, server, pid, count):
        self.rpc, self.server, self.pid = rpc, server, pid
        self.consumers = [str(uuid.uuid4()) for _ in range(count)]
        self.answered = {}  # consumer: (monotonic time, answer or error)
        self.threads = []

    def _wait(self, consumer):
        try:
            answer = self.rpc.call(
                'wait_for_events', server=self.server,
                rpc_timeout=WAIT_TIMEOUT + 40, consumer_uuid=consumer,
                names=['network-vif-plugged:bench'], timeout=WAIT_TIMEOUT)
        except Exception as exc:
            answer = exc
        self.answered[consumer] = (time.monotonic(), answer)

    def park(self):
        threading.stack_size(512 * 1024)
        try:
            for consumer in self.consumers:
                thread = threading.Thread(target=self._wait, args=(consumer,),
                                          daemon=True)
                thread.start()
                self.threads.append(thread)
        finally:
            threading.stack_size(0)
        # The worker takes its calls in order, though its threads may
        # finish them out of order: once a call sent after all of them
        # answers and the process is quiet, every wait has been parked.
        self.rpc.call('list_resource_classes', server=self.server,
                      rpc_timeout=WAIT_TIMEOUT)
        _quiet(self.pid)
        # This client's collections would otherwise walk every parked
        # call's objects, pausing the threads that take the answers.
        gc.freeze()

    def wake(self, rpc, server, rate):
        """Store each waiter's event through ``server``, 50 a call at
        ``rate`` events/s; {consumer: monotonic time its call returned}."""
        stored = {}
        batch = 50
        started = time.monotonic()
        for index in range(0, len(self.consumers), batch):
            consumers = self.consumers[index:index + batch]
            pause = started + index / rate - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            rpc.call('external_event', server=server, events=[
                {'name': 'network-vif-plugged', 'consumer_uuid': c,
                 'tag': 'bench'} for c in consumers])
            now = time.monotonic()
            for consumer in consumers:
                stored[consumer] = now
        for thread in self.threads:
            thread.join(WAIT_TIMEOUT + 60)
        return stored


def _wake_row(waiters, stored):
    latencies, ok = [], 0
    for consumer in waiters.consumers:
        when, answer = waiters.answered.get(consumer, (None, None))
        if isinstance(answer, dict) and answer.get('status') == 200:
            ok += 1
            latencies.append(when - stored[consumer])
    return {'row': 'wake', 'waiters': len(waiters.consumers),
            'answered_200': ok,
            'latency_p50_ms': round(load.percentile(latencies, 0.5) * 1000),
            'latency_p99_ms': round(load.percentile(latencies, 0.99) * 1000),
            'latency_max_ms': round(max(latencies) * 1000)}


def _idle(sets, seconds=5):
    """Worker CPU per second of each set while nothing is asked of it."""
    before = {name: a.cpu_seconds() for name, a in sets.items()}
    time.sleep(seconds)
    return {name: round((a.cpu_seconds() - before[name]) * 1000 / seconds,
                        1) for name, a in sets.items()}


def run(args, clients, workers):
    """``clients``/``workers``: {'parked': ..., 'none': ...}, two worker
    services on one database; waits are parked in process 0 of the
    first. Allocates go to each in turn, so both see the same machine,
    and to process 0 of each (``server=``), so those of ``parked`` all
    meet its waits."""
    name, hosts = _hosts(clients['parked'])
    sets = {key: Allocates(clients[key], '%s.0' % clients[key].topic, name,
                           hosts, _worker_pids(workers[key]), args)
            for key in clients}
    interleaved(sets, argparse.Namespace(
        seconds=2, concurrency=args.concurrency))  # warm-up
    for allocates in sets.values():
        allocates.aim([])
    before = interleaved(sets, args)
    yield dict({'row': 'allocate, nothing parked',
                'concurrency': args.concurrency,
                'ratio': round(before['parked']['calls_per_s'] /
                               before['none']['calls_per_s'], 3),
                'writes_to': {key: sets[key].writes_to('no waits yet')
                              for key in sets}}, **before)
    yield dict({'row': 'idle worker ms/s, nothing parked'}, **_idle(sets))
    rpc = clients['parked']
    pid = sets['parked'].pids[0]
    waiters = Waiters(rpc, sets['parked'].server, pid, args.waiters)
    threads, rss = _threads(pid), _rss_mib(pid)
    began = time.monotonic()
    waiters.park()
    yield {'row': 'park', 'waiters': args.waiters,
           'seconds': round(time.monotonic() - began, 1),
           'parked_in': waiters.server,
           'answered_early': len(waiters.answered),
           'process_0_threads': [threads, _threads(pid)],
           'process_0_rss_mib': [rss, _rss_mib(pid)]}
    yield dict({'row': 'idle worker ms/s, %d parked' % args.waiters},
               **_idle(sets))
    sets['parked'].aim(waiters.consumers)
    sets['none'].aim([])
    parked = interleaved(sets, args)
    yield dict({'row': 'allocate, %d parked in "parked"' % args.waiters,
                'concurrency': args.concurrency,
                'ratio': round(parked['parked']['calls_per_s'] /
                               parked['none']['calls_per_s'], 3),
                'answered_meanwhile': len(waiters.answered),
                'writes_to': {
                    'parked': sets['parked'].writes_to(
                        'all %d waits' % args.waiters),
                    'none': sets['none'].writes_to('no wait')}}, **parked)
    through = '%s.%d' % (rpc.topic, args.workers - 1)
    stored = waiters.wake(rpc, through, args.wake_rate)
    yield dict(_wake_row(waiters, stored), wake_rate=args.wake_rate,
               stored_through=dict(server=through, process=args.workers - 1,
                                   holds='all %d waits' % args.waiters
                                   if args.workers == 1 else 'no wait'))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--backend', default='postgresql',
                        choices=services.BACKENDS)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--waiters', type=int, default=10000)
    parser.add_argument('--seconds', type=float, default=10)
    parser.add_argument('--concurrency', type=int, default=8)
    parser.add_argument('--wake-rate', type=float, default=500)
    parser.add_argument('--out', default=OUT, help='the JSON result file')
    args = parser.parse_args(argv)
    record = results.Record('waiters', sys.argv[1:] if argv is None
                            else argv)
    # Thousands of calls at once outgrow the client's connection pool
    # (rpc_conn_pool_size) for a moment; each says so otherwise.
    logging.getLogger('oslo_messaging._drivers.pool').setLevel(logging.ERROR)
    scratch = tempfile.mkdtemp(prefix='aw-bench-waiters-')
    clients, workers = {}, {}
    with services.fresh_database(args.backend, scratch) as url:
        try:
            for key in ('parked', 'none'):
                topic = 'aw-bench-%s-%s' % (key, uuid.uuid4().hex[:8])
                folder = os.path.join(scratch, key)
                os.makedirs(folder)
                config = services.write_config(
                    os.path.join(folder, 'worker.conf'), url, topic,
                    workers=args.workers, extra=WORKER_EXTRA)
                if not workers:
                    services.manage(config, 'db', 'sync')
                clients[key] = services.BareClient(topic, timeout=120)
                clients[key].topic = topic
                workers[key] = services.Worker(config).start(clients[key])
            rows = []
            for row in run(args, clients, workers):
                print(json.dumps(row), flush=True)
                rows.append(row)
        finally:
            for worker in workers.values():
                worker.stop()
    record.write(args.out, rows)
    print('# rows in %s' % args.out)


if __name__ == '__main__':
    main()
