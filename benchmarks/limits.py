"""The price of project limits: ``allocate`` with limits off and on, in the
same run (``run.py --limits``).

A second set of worker processes serves a topic of its own on the same
database with ``[quota] driver = unified_limits``, reading a real Keystone
(tools/keystone.sh) in which one limit per resource class (and
``servers``) is registered for every project, high enough never to
refuse. Both sets get the same items: consumers of 100 projects, chosen at
random per item, so the limits-on rows pay for the project locks and the
usage counts of a realistic spread rather than for one project's queue.
The two are measured in turns (off, on, on, off; half of ``--seconds``
each), so a change in the machine's load falls on both alike. Each
limits-on row's ceiling is its limits-off row: its ratio is the price.
"""

import os
import random
import tempfile
import uuid

from benchmarks.load import load, summary
from tests.functional import keystone as keystone_service
from tests.functional import services

PROJECTS = 100
BATCH = 100
NEVER_REFUSES = 10 ** 9


class Limits(object):
    """The limits-on worker set and its Keystone, beside a Bench."""

    def __init__(self, bench, scratch):
        self.bench = bench
        self.keystone = keystone_service.Keystone(
            tempfile.mkdtemp(prefix='keystone-', dir=scratch)).start()
        for resource in ('class:VCPU', 'class:MEMORY_MB', 'servers'):
            self.keystone.registered_limit(resource, NEVER_REFUSES)
        self.projects = ['bench-limits-%d' % n for n in range(PROJECTS)]
        topic = 'aw-bench-limits-%s' % uuid.uuid4().hex[:8]
        config = services.write_config(
            os.path.join(scratch, 'limits.conf'), bench.database, topic,
            workers=bench.args.workers,
            extra='[DEFAULT]\nexecutor_thread_pool_size = %d\n'
            '[quota]\ndriver = unified_limits\n'
            % bench.args.executor_threads + self.keystone.oslo_limit_config())
        self.client = services.BareClient(topic, timeout=120)
        self.worker = services.Worker(config).start(self.client)

    def close(self):
        self.worker.stop()
        self.keystone.stop()

    def item(self):
        item = self.bench.item()
        item['project_id'] = random.choice(self.projects)
        return item

    def _in_turns(self, off, on, concurrency, items_per_call):
        """``drive`` results of ``off`` and ``on`` measured in turns."""
        runs = {off: [[], [], 0.0, []], on: [[], [], 0.0, []]}
        meter, seconds = self.bench.meter, self.bench.args.seconds
        for fn in (off, on, on, off):
            before = meter.snapshot()
            latencies, errors, elapsed = load(fn, concurrency, seconds / 2)
            spent = meter.spent(before, meter.snapshot())
            total = runs[fn]
            total[0].extend(latencies)
            total[1].extend(errors)
            total[2] += elapsed
            total[3].append(spent)
        return [summary(*runs[fn][:3], items_per_call=items_per_call) + ({
            part: sum(s[part] for s in runs[fn][3])
            for part in runs[fn][3][0]},) for fn in (off, on)]

    def run(self, concurrency):
        bench, check = self.bench, self.bench.check
        for name, size in (('allocate_single', 1),
                           ('allocate_batch_100_independent', BATCH)):
            unit = 'items' if size > 1 else 'calls'

            def off():
                check(bench.client.allocate(
                    items=[self.item() for _ in range(size)]))

            def on():
                check(self.client.allocate(
                    items=[self.item() for _ in range(size)]))

            off_row, on_row = self._in_turns(off, on, concurrency, size)
            ceiling = bench.record(name + '_limits_off', concurrency,
                                   off_row, None, unit)
            bench.record(name + '_limits_on', concurrency, on_row, ceiling,
                         unit)
