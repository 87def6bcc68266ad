"""Two worker configurations of one run measured in turns, for a price
(metrics on against off, limits on against off): the same calls go to
each in short windows, in rounds of a fresh worker set each.

A fresh pair of sets per round, because sets of one configuration
differ: two sets started alike and kept for a whole run read 7-20% apart
in worker CPU per call here (an A/A run of ``run.py --metrics`` with
``AW_BENCH_METRICS_AA=1``, metrics off in both), more than the prices
measured, and which of the two was the slower changed from run to run.
Three rounds average that out.

Short windows within a round, because the machine drifts: turns of one
configuration measured 5 s each, one after the other, read 252 to 469
calls a turn, slowly up and down over a minute. Within a round both sets
stay up and the windows alternate: off, on, on, off, on, off, off, on.
Each side holds four of the eight places in that order, with the same
mean place and the same spread about it, so a drift linear or quadratic
in the place falls on both alike, insofar as every window lasts as long
(each is the same number of seconds of calls; the switches between them
are not measured). The next round reverses the order. Drift that is not
smooth within a round, or windows whose calls straddle a change, are
not cancelled: the method's own noise, measured by an A/A run, is about
5% per row.
"""

import os

from benchmarks import cpu
from benchmarks.load import load, summary
from tests.functional import services

ROUNDS = 3
WINDOWS = ('off', 'on', 'on', 'off', 'on', 'off', 'off', 'on')
# Seconds of calls each fresh set answers before it is measured.
WARM_SECONDS = 2
# The shortest window: a 100-item call at c=16 takes 0.3 s.
MIN_WINDOW_SECONDS = 1.0


def windows(round_number):
    """The order of a round's windows (every other round mirrored)."""
    if round_number % 2 == 0:
        return WINDOWS
    mirror = {'off': 'on', 'on': 'off'}
    return tuple(mirror[name] for name in WINDOWS)


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

    def window_seconds(self):
        """Each window's length: as much measured per side as three
        turns of half ``--seconds`` each."""
        per_side = 3 * self.bench.args.seconds / 2
        return max(per_side / (ROUNDS * len(WINDOWS) / 2),
                   MIN_WINDOW_SECONDS)

    def _window(self, name, worker, call, concurrency, seconds, during):
        client = self.sets[name][1]
        stop = during(name) if during else None
        pid = worker.process.pid
        before = self.bench.meter.snapshot(), cpu.tree_seconds(pid)
        try:
            latencies, errors, elapsed = load(lambda: call(client),
                                              concurrency, seconds)
        finally:
            after = self.bench.meter.snapshot(), cpu.tree_seconds(pid)
            if stop:
                stop()
        spent = self.bench.meter.spent(before[0], after[0])
        spent['worker'] = after[1][0] - before[1][0]
        return latencies, errors, elapsed, spent, after[1][1] - before[1][1]

    def _round(self, number, call, concurrency, during, measured):
        order = windows(number)
        workers = {}
        try:
            # Started and warmed in the order of the round's windows.
            for name in order[:2]:
                config, client = self.sets[name]
                workers[name] = services.Worker(config).start(client)
                load(lambda: call(client), concurrency,
                     min(WARM_SECONDS, self.bench.args.seconds / 4))
            seconds = self.window_seconds()
            for name in order:
                measured(name, self._window(name, workers[name], call,
                                            concurrency, seconds, during))
        finally:
            for worker in workers.values():
                worker.stop()

    def measure(self, call, concurrency, items_per_call=1, during=None):
        """``call(client)`` from ``concurrency`` threads in turns: {name:
        (summary..., CPU parts)} and {name: the sets' parents' CPU s}.
        ``during(name)``, when given, runs as each window is measured and
        returns what stops it."""
        runs = {name: [[], [], 0.0, []] for name in self.sets}
        parents = dict.fromkeys(self.sets, 0.0)

        def measured(name, window):
            latencies, errors, elapsed, spent, parent = window
            total = runs[name]
            total[0].extend(latencies)
            total[1].extend(errors)
            total[2] += elapsed
            total[3].append(spent)
            parents[name] += parent

        for number in range(ROUNDS):
            self._round(number, call, concurrency, during, measured)
        rows = {}
        for name, (latencies, errors, elapsed, spent) in runs.items():
            rows[name] = summary(latencies, errors, elapsed,
                                 items_per_call=items_per_call) + (
                {part: sum(s[part] for s in spent) for part in spent[0]},)
        return rows, parents
