"""What metrics cost on the hot path: the single allocate row against two
workers of the same run, one with ``[metrics] port`` set (prometheus_client
multiprocess files, every hook recording) and one without, on the same
database and broker, measured in turns (off, on, on, off, off, on) so a
change in the machine's load falls on both alike. The on worker's
endpoint is scraped every second meanwhile, as a busy Prometheus would.
Besides the run's usual figures each row has ``worker`` in its CPU
parts: the CPU of the serving worker's child processes only (they answer
the calls), the figure a shared machine's load disturbs least. The
parent, which serves the scrapes, is measured apart: its CPU per scrape
is printed, since Prometheus scrapes on its own clock (15 s by default),
not per call.

    .venv/bin/python -m benchmarks.run --only allocate_single --metrics
"""

import os
import threading
import urllib.request

from benchmarks import cpu
from benchmarks.load import load, summary
from tests.functional import services

TURNS = ('off', 'on', 'on', 'off', 'off', 'on')


def tree_seconds(root):
    """CPU seconds of process ``root``'s descendants, and of ``root``."""
    stats = cpu._all_stats()
    wanted, changed = {root}, True
    while changed:
        changed = False
        for pid, (ppid, _, _) in stats.items():
            if ppid in wanted and pid not in wanted:
                wanted.add(pid)
                changed = True
    children = sum(stats[pid][1] for pid in wanted
                   if pid in stats and pid != root)
    return children, stats[root][1] if root in stats else 0.0


class MetricsOverhead(object):

    def __init__(self, bench, scratch):
        self.bench = bench
        self.port = services.free_port()
        topic = bench.client.client.target.topic + '-metrics'
        config = services.write_config(
            os.path.join(scratch, 'bench-metrics.conf'), bench.database,
            topic, workers=bench.args.workers,
            extra='[DEFAULT]\nexecutor_thread_pool_size = %d\n'
                  '[metrics]\nport = %d\n'
                  % (bench.args.executor_threads, self.port))
        self.client = services.BareClient(topic, timeout=120)
        self.worker = services.Worker(config).start(self.client)
        self._stop = threading.Event()
        self.scrapes = 0
        threading.Thread(target=self._scrape, daemon=True).start()

    def _scrape(self):
        url = 'http://127.0.0.1:%d/metrics' % self.port
        while not self._stop.wait(1.0):
            with urllib.request.urlopen(url, timeout=30) as response:
                response.read()
            self.scrapes += 1

    def run(self, concurrency):
        bench = self.bench
        served = {
            'off': (lambda: bench.check(bench.client.allocate(
                items=[bench.item()])), bench.worker),
            'on': (lambda: bench.check(self.client.allocate(
                items=[bench.item()])), self.worker)}
        runs = {name: [[], [], 0.0, []] for name in served}
        parent = tree_seconds(self.worker.process.pid)[1], self.scrapes
        for name in TURNS:
            fn, worker = served[name]
            before = bench.meter.snapshot(), tree_seconds(worker.process.pid)
            latencies, errors, elapsed = load(
                fn, concurrency, bench.args.seconds / 2)
            spent = bench.meter.spent(before[0], bench.meter.snapshot())
            spent['worker'] = tree_seconds(worker.process.pid)[0] - \
                before[1][0]
            total = runs[name]
            total[0].extend(latencies)
            total[1].extend(errors)
            total[2] += elapsed
            total[3].append(spent)
        rows = {}
        for name in ('off', 'on'):
            spent = {part: sum(s[part] for s in runs[name][3])
                     for part in runs[name][3][0]}
            rows[name] = summary(*runs[name][:3]) + (spent,)
        baseline = bench.record('allocate_single_metrics_off', concurrency,
                                rows['off'], None)
        bench.record('allocate_single_metrics_on', concurrency, rows['on'],
                     baseline)
        per_call = {name: rows[name][5]['worker'] * 1000 / max(
            rows[name][4], 1) for name in rows}
        scrapes = self.scrapes - parent[1]
        scrape_ms = (tree_seconds(self.worker.process.pid)[1] - parent[0]) \
            * 1000 / max(scrapes, 1)
        print('# c=%d worker processes\' CPU per call: metrics off %.3f ms, '
              'on %.3f ms (x%.3f); the parent %.1f ms CPU per scrape (%d '
              'scrapes)' % (concurrency, per_call['off'], per_call['on'],
                            per_call['on'] / per_call['off'], scrape_ms,
                            scrapes), flush=True)

    def close(self):
        self._stop.set()
        self.worker.stop()
