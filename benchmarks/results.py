"""Result files: one JSON document per run, with what it was run on and
from (commit, command, machine), so that a figure read months later
still says where it came from.

    record = results.Record('claims_filtered', argv)
    ... measure ...
    record.write('benchmarks/results/claims_filtered.json', rows)
"""

import datetime
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commit():
    """HEAD and whether the work tree differs from it: a dirty tree's
    figures are not HEAD's (untracked files count, since a new module may
    be what ran)."""
    def git(*args):
        return subprocess.run(['git'] + list(args), cwd=ROOT,
                              capture_output=True, text=True).stdout.strip()
    return {'sha': git('rev-parse', 'HEAD') or None,
            # Result files are not what ran: a run beside earlier ones
            # is still HEAD's.
            'dirty': bool(git('status', '--porcelain', '--', '.',
                              ':!benchmarks/results'))}


def loadavg():
    return [round(v, 2) for v in os.getloadavg()]


class Record(object):
    """What a run's result file says besides its rows; taken when the run
    starts (the load average again when it is written)."""

    def __init__(self, benchmark, arguments):
        python = os.path.relpath(sys.executable, ROOT)
        self.head = {
            'benchmark': benchmark,
            'commit': commit(),
            # How to run it again, from the repository's top.
            'command': [python, '-m', 'benchmarks.' + benchmark] +
            list(arguments),
            'machine': {'cores': os.cpu_count(),
                        'loadavg': {'start': loadavg()}},
            'started': datetime.datetime.now(
                datetime.timezone.utc).isoformat(timespec='seconds'),
        }

    def write(self, path, rows):
        document = dict(self.head, rows=rows)
        document['machine'] = dict(self.head['machine'], loadavg=dict(
            self.head['machine']['loadavg'], end=loadavg()))
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        with open(path, 'w') as f:
            json.dump(document, f, indent=1)
            f.write('\n')
        return document
