"""What an import pass tells its operator: counts of what was carried
over, every issue item by item, and a progress bar while it runs."""

import collections
import sys
import time

COUNTED = ('resource_classes', 'traits', 'providers', 'inventories',
           'provider_traits', 'provider_aggregates', 'consumers',
           'allocations', 'providers_removed', 'consumers_removed',
           'consumers_unchanged')


class Refused(Exception):
    """One line saying why nothing was done and what to do instead."""


class Report(object):

    def __init__(self, mode, dry_run):
        self.mode = mode
        self.dry_run = dry_run
        self.counts = collections.Counter()
        self.issues = []
        self.started = time.monotonic()
        self.since = None
        self.partition = None
        # Projects whose consumers the pass wrote or removed: the only
        # project counters it sets (other partitions' are left alone).
        self.projects = set()

    def count(self, what, n=1):
        self.counts[what] += n

    def add(self, issues):
        self.issues.extend(issues)

    def touched(self, project_id):
        self.projects.add(project_id)

    def summary(self):
        seconds = time.monotonic() - self.started
        items = sum(self.counts[k] for k in (
            'providers', 'inventories', 'provider_traits',
            'provider_aggregates', 'consumers', 'allocations'))
        return {
            'mode': self.mode, 'dry_run': self.dry_run,
            'partition': self.partition,
            'since': self.since.isoformat() if self.since else None,
            'counts': {k: self.counts[k] for k in COUNTED},
            'issues': [i._asdict() for i in self.issues],
            'seconds': round(seconds, 3),
            'items_per_second': round(items / seconds, 1) if seconds else 0}

    def rows(self):
        """The summary as (what, count) rows for a table."""
        return [{'what': k, 'count': self.counts[k]} for k in COUNTED
                if self.counts[k] or k in ('providers', 'consumers')]


class Progress(object):
    """A bar per stage of the pass on stderr (tqdm), drawn only when
    stderr is a terminal; ``show`` is told how far a stage has come."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.bar = self.label = None

    def show(self, label, done, total):
        if self.bar is None or self.label != label:
            self.end()
            self.label = label
            # Imported here: the CLI's commands that draw no bar start
            # without it.
            import tqdm
            self.bar = tqdm.tqdm(total=total, desc=label, file=self.stream,
                                 disable=not self.stream.isatty(),
                                 mininterval=0.1, leave=True)
        self.bar.update(done - self.bar.n)

    def end(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = self.label = None
