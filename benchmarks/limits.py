"""The price of project limits: ``allocate`` with limits off and on, in the
same run (``run.py --limits``).

A second set of worker processes serves a topic of its own on the same
database with ``[quota] driver = unified_limits``, reading a real Keystone
(tools/keystone.sh) in which one limit per resource class (and
``servers``) is registered for every project, high enough never to
refuse. Both sets get the same items: consumers of 100 projects, chosen at
random per item, so the limits-on rows pay for the project locks and the
usage counts of a realistic spread rather than for one project's queue.
The two are measured in alternating windows, in rounds of a fresh pair
of worker sets (``turns.py``), so a change in the machine's load falls on
both alike. Each limits-on row's ceiling is its limits-off row: its ratio
is the price.

``AW_BENCH_LIMITS_AA=1`` leaves limits off in both sets (an A/A run:
what the method itself reads as a price).
"""

import os
import random
import tempfile

from benchmarks import turns
from tests.functional import keystone as keystone_service

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
        limited = '[quota]\ndriver = unified_limits\n' + \
            self.keystone.oslo_limit_config()
        if os.environ.get('AW_BENCH_LIMITS_AA'):
            limited = ''
        self.turns = turns.Turns(bench, scratch, 'limits',
                                 {'off': '', 'on': limited})

    def close(self):
        self.keystone.stop()

    def item(self):
        item = self.bench.item()
        item['project_id'] = random.choice(self.projects)
        return item

    def run(self, concurrency):
        bench, check = self.bench, self.bench.check
        for name, size in (('allocate_single', 1),
                           ('allocate_batch_100_independent', BATCH)):
            unit = 'items' if size > 1 else 'calls'
            rows, _ = self.turns.measure(
                lambda client: check(client.allocate(
                    items=[self.item() for _ in range(size)])),
                concurrency, items_per_call=size)
            off_row, on_row = rows['off'], rows['on']
            ceiling = bench.record(name + '_limits_off', concurrency,
                                   off_row, None, unit)
            bench.record(name + '_limits_on', concurrency, on_row, ceiling,
                         unit)
