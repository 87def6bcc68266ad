"""What metrics cost on the hot path: the single allocate row against two
worker sets of the same run, one with ``[metrics] port`` set
(prometheus_client multiprocess files, every hook recording) and one
without, on the same database and broker, in turns of a fresh set each
(``turns.py``). The on set's endpoint is scraped every second while it is
measured, as a busy Prometheus would. Besides the run's usual figures
each row has ``worker`` in its CPU parts: the CPU of the serving set's
child processes only (they answer the calls), the figure a shared
machine's load disturbs least. The parent, which serves the scrapes, is
measured apart: its CPU per scrape is printed, since Prometheus scrapes
on its own clock (15 s by default), not per call.

    .venv/bin/python -m benchmarks.run --only allocate_single --metrics

``AW_BENCH_METRICS_AA=1`` leaves metrics off in both sets (an A/A run:
what the method itself reads as a price).
"""

import os
import threading
import urllib.request

from benchmarks import turns
from tests.functional import services


class MetricsOverhead(object):

    def __init__(self, bench, scratch):
        self.bench = bench
        self.port = services.free_port()
        self.same = bool(os.environ.get('AW_BENCH_METRICS_AA'))
        metered = '' if self.same else '[metrics]\nport = %d\n' % self.port
        self.turns = turns.Turns(bench, scratch, 'metrics',
                                 {'off': '', 'on': metered})
        self.scrapes = 0

    def _scraping(self, name):
        """Scrape the on set every second until the returned stop()."""
        if name != 'on' or self.same:
            return None
        stop = threading.Event()
        url = 'http://127.0.0.1:%d/metrics' % self.port

        def scrape():
            while not stop.wait(1.0):
                try:
                    with urllib.request.urlopen(url, timeout=30) as answer:
                        answer.read()
                except OSError:
                    return  # the set stopped while a scrape was due
                self.scrapes += 1

        threading.Thread(target=scrape, daemon=True).start()
        return stop.set

    def run(self, concurrency):
        bench = self.bench
        scrapes = self.scrapes
        rows, parents = self.turns.measure(
            lambda client: bench.check(client.allocate(
                items=[bench.item()])),
            concurrency, during=self._scraping)
        baseline = bench.record('allocate_single_metrics_off', concurrency,
                                rows['off'], None)
        bench.record('allocate_single_metrics_on', concurrency, rows['on'],
                     baseline)
        per_call = {name: rows[name][5]['worker'] * 1000 / max(
            rows[name][4], 1) for name in rows}
        scrapes = self.scrapes - scrapes
        print('# c=%d worker processes\' CPU per call: metrics off %.3f ms, '
              'on %.3f ms (x%.3f); the parent %.1f ms CPU per scrape (%d '
              'scrapes)' % (concurrency, per_call['off'], per_call['on'],
                            per_call['on'] / per_call['off'],
                            parents['on'] * 1000 / max(scrapes, 1), scrapes),
              flush=True)

    def close(self):
        pass
