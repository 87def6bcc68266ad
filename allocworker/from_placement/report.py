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

    def count(self, what, n=1):
        self.counts[what] += n

    def add(self, issues):
        self.issues.extend(issues)

    def summary(self):
        seconds = time.monotonic() - self.started
        items = sum(self.counts[k] for k in (
            'providers', 'inventories', 'provider_traits',
            'provider_aggregates', 'consumers', 'allocations'))
        return {
            'mode': self.mode, 'dry_run': self.dry_run,
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
    """A one-line bar on stderr, drawn only when stderr is a terminal and
    at most ten times a second."""

    def __init__(self, stream=None, width=30):
        self.stream = stream or sys.stderr
        self.shown = self.stream.isatty()
        self.width = width
        self.drawn = 0.0

    def show(self, label, done, total):
        if not self.shown:
            return
        now = time.monotonic()
        if now - self.drawn < 0.1 and done < total:
            return
        self.drawn = now
        filled = int(self.width * done / total) if total else self.width
        self.stream.write('\r%-12s [%s%s] %d/%d' % (
            label, '#' * filled, '.' * (self.width - filled), done, total))
        self.stream.flush()

    def end(self):
        if self.shown:
            self.stream.write('\n')
            self.stream.flush()
