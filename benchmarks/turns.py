"""Two worker configurations of one run measured in turns, for a price
(metrics on against off, limits on against off): the same calls go to
each in turns (off, on, on, off, off, on), so a change in the machine's
load falls on both alike, and each turn starts a worker set of its own,
warmed before it is measured.

A fresh set per turn, because sets of one configuration differ: two
sets started alike and kept for a whole run read 7-20% apart in worker
CPU per call here (an A/A run of ``run.py --metrics`` with
``AW_BENCH_METRICS_AA=1``, metrics off in both), more than the prices
measured, and which of the two was the slower changed from run to run.
Three sets a side average that out.
"""

import os

from benchmarks import cpu
from benchmarks.load import load, summary
from tests.functional import services

TURNS = ('off', 'on', 'on', 'off', 'off', 'on')
# Seconds of calls a fresh set answers before it is measured (at most
# half a turn).
WARM_SECONDS = 2


class Turns(object):
    """Worker sets ``off`` and ``on`` of a Bench: the run's configuration
    plus ``extras[name]`` (configuration text) each."""

    def __init__(self, bench, scratch, label, extras):
        self.bench = bench
        self.sets = {}
        for name in ('off', 'on'):
            topic = '%s-%s-%s' % (bench.client.client.target.topic, label,
                                  name)
            directory = os.path.join(scratch, '%s-%s' % (label, name))
            os.makedirs(directory, exist_ok=True)
            config = services.write_config(
                os.path.join(directory, 'worker.conf'), bench.database,
                topic, workers=bench.args.workers,
                extra='[DEFAULT]\nexecutor_thread_pool_size = %d\n'
                % bench.args.executor_threads + extras[name])
            self.sets[name] = config, services.BareClient(topic, timeout=120)

    def _turn(self, name, call, concurrency, during):
        bench = self.bench
        config, client = self.sets[name]
        worker = services.Worker(config).start(client)
        try:
            load(lambda: call(client), concurrency,
                 min(WARM_SECONDS, bench.args.seconds / 4))
            stop = during(name) if during else None
            pid = worker.process.pid
            before = bench.meter.snapshot(), cpu.tree_seconds(pid)
            try:
                latencies, errors, elapsed = load(
                    lambda: call(client), concurrency, bench.args.seconds / 2)
            finally:
                after = bench.meter.snapshot(), cpu.tree_seconds(pid)
                if stop:
                    stop()
        finally:
            worker.stop()
        spent = bench.meter.spent(before[0], after[0])
        spent['worker'] = after[1][0] - before[1][0]
        return latencies, errors, elapsed, spent, after[1][1] - before[1][1]

    def measure(self, call, concurrency, items_per_call=1, during=None):
        """``call(client)`` from ``concurrency`` threads in turns: {name:
        (summary..., CPU parts)} and {name: the sets' parents' CPU s}.
        ``during(name)``, when given, runs as each turn is measured and
        returns what stops it."""
        runs = {name: [[], [], 0.0, []] for name in self.sets}
        parents = dict.fromkeys(self.sets, 0.0)
        for name in TURNS:
            latencies, errors, elapsed, spent, parent = self._turn(
                name, call, concurrency, during)
            total = runs[name]
            total[0].extend(latencies)
            total[1].extend(errors)
            total[2] += elapsed
            total[3].append(spent)
            parents[name] += parent
        rows = {}
        for name, (latencies, errors, elapsed, spent) in runs.items():
            rows[name] = summary(latencies, errors, elapsed,
                                 items_per_call=items_per_call) + (
                {part: sum(s[part] for s in spent) for part in spent[0]},)
        return rows, parents
