"""Every target of issue 25 (scheduling and events at cloud scale) in one
run, on one machine and one code, each judged met or not.

    .venv/bin/python -m benchmarks.scale_targets [--out rows.json]
        [--quick]

Runs, one after the other (never two at once: they would share the
machine's two cores), the benchmarks that measure the targets, with the
issue's arguments:

- ``claims_scale --trees 1000 10000 100000``: a claim at c=1 within 2
  allocates' p50, claims/s at c=16 at least half of allocates/s, worker
  CPU per claim (c=1) flat within 1.5x from 1,000 to 100,000 trees;
- ``claims_storm --trees 10000``: 200 boots at c=16, at least 10x the
  boots/s of Nova's flow on Placement 16, no conflict, no error, spread
  within 10% of even;
- ``candidates --trees 1000 10000 100000 --serve uwsgi
  --placement-up-to 10000``: ``GET /allocation_candidates?limit=1000``
  from allocworker-api at 10,000 trees within 0.1 of Placement's p50,
  and the API's peak RSS flat (within 1.5x) from 1,000 to 100,000;
- ``wide_trees --hosts 200``: 8 isolated groups on hosts of 8 devices,
  candidates (limit 1000) and a claim each within 100 ms p50, beside
  Placement's figure;
- ``waiters``: 10,000 parked in one process, allocates at c=8 at least
  0.9 of the same with none parked, wake p99 within 1 s.

Every row of every benchmark is kept (``--out``), each tagged with its
benchmark; the verdicts are printed last. ``--quick`` runs small sizes
to check the driver itself (its verdicts mean nothing).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Its rows are judged here; the committed result file is a run of its own.
SCRATCH_WAITERS = os.path.join(tempfile.gettempdir(),
                               'aw-scale-targets-waiters.json')
FULL = [
    ('claims_scale', ['--trees', '1000', '10000', '100000',
                      '--seconds', '8']),
    ('claims_storm', ['--trees', '10000']),
    ('candidates', ['--trees', '1000', '10000', '100000', '--serve',
                    'uwsgi', '--placement-up-to', '10000', '--seconds',
                    '5', '--json']),
    ('wide_trees', ['--hosts', '200', '--calls', '30',
                    '--placement-calls', '2']),
    ('waiters', ['--out', SCRATCH_WAITERS]),
]
QUICK = [
    ('claims_scale', ['--trees', '100', '200', '--seconds', '1']),
    ('claims_storm', ['--trees', '100', '--boots', '20']),
    ('candidates', ['--trees', '100', '200', '--serve', 'uwsgi',
                    '--placement-up-to', '100', '--calls', '2',
                    '--seconds', '1', '--json']),
    ('wide_trees', ['--hosts', '10', '--calls', '3',
                    '--placement-calls', '1']),
    ('waiters', ['--waiters', '200', '--seconds', '2', '--out',
                 SCRATCH_WAITERS]),
]


def run(benchmark, arguments):
    """The JSON rows ``benchmark`` printed, each tagged with it."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, '-m', 'benchmarks.' + benchmark] + arguments,
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    rows = [dict(json.loads(line), benchmark=benchmark)
            for line in done.stdout.splitlines() if line.startswith('{')]
    print('# %s %s: %d rows in %.0f s, exit %d'
          % (benchmark, ' '.join(arguments), len(rows),
             time.monotonic() - started, done.returncode),
          file=sys.stderr, flush=True)
    return rows


def _of(rows, benchmark, **fields):
    return [r for r in rows if r['benchmark'] == benchmark and all(
        r.get(k) == v for k, v in fields.items())]


def verdicts(rows):
    """[(target, figure, met)] from every benchmark's rows."""
    found = []

    def judge(target, figure, met):
        found.append((target, figure, bool(met)))

    claim_cpu = {}
    for row in _of(rows, 'claims_scale', row='claim'):
        ratio = row['ratio_to_allocate']
        if row['concurrency'] == 1:
            claim_cpu[row['trees']] = row['worker_cpu_ms']
            judge('claim c=1 p50 <= 2 allocates, %d trees' % row['trees'],
                  ratio['p50'], ratio['p50'] <= 2)
        else:
            judge('claims/s c=16 >= 0.5 allocates/s, %d trees'
                  % row['trees'], ratio['per_s'], ratio['per_s'] >= 0.5)
    if claim_cpu:
        spread = max(claim_cpu.values()) / min(claim_cpu.values())
        judge('worker CPU per claim flat (<= 1.5x) over %s trees'
              % sorted(claim_cpu), round(spread, 2), spread <= 1.5)
    for row in _of(rows, 'claims_storm', row='claim'):
        ratio = row.get('ratio_boots_per_s')
        judge('storm %d boots c=16, %d trees: >= 10x Placement boots/s'
              % (row['boots'], row['trees']), ratio,
              ratio is not None and ratio >= 10)
        judge('storm: 0 conflicts, 0 errors',
              (row['conflicts'], row['errors']),
              row['conflicts'] == 0 and not row['errors'])
        judge('storm: spread within 10% of even', row['spread_vs_even'],
              row['spread_vs_even'] >= 0.9)
    api = _of(rows, 'candidates', server='allocworker-api')
    # Placement is asked up to 10,000 trees; the target is at the
    # largest cloud it was asked on.
    beside = max([r['trees'] for r in api if r['ratio'] is not None],
                 default=None)
    for row in api:
        if row['trees'] == beside:
            judge('GET candidates limit=1000 %s, %d trees: <= 0.1 of '
                  'Placement p50' % (row['workload'], row['trees']),
                  row['ratio'], row['ratio'] <= 0.1)
    if api:
        rss = {}
        for row in api:
            rss[row['trees']] = max(rss.get(row['trees'], 0),
                                    row['rss_peak_mb'])
        spread = max(rss.values()) / min(rss.values())
        judge('allocworker-api peak RSS flat (<= 1.5x) over %s trees'
              % sorted(rss), round(spread, 2), spread <= 1.5)
    for row in _of(rows, 'wide_trees'):
        if row['row'].startswith(('candidates', 'GET')) and \
                'Placement' not in row['row'] or row['row'] == 'claim':
            judge('wide trees %d hosts: %s p50 <= 100 ms'
                  % (row['hosts'], row['row']), row['p50_ms'],
                  row['p50_ms'] <= 100)
    for row in _of(rows, 'waiters'):
        if row['row'].startswith('allocate,') and 'parked in' in \
                row['row']:
            judge('waiters: allocates c=8 with them parked >= 0.9 of none',
                  row['ratio'], row['ratio'] >= 0.9)
        if row['row'] == 'wake':
            judge('waiters: wake p99 <= 1 s across processes (ms)',
                  row['latency_p99_ms'], row['latency_p99_ms'] <= 1000)
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', default=None,
                        help='write every row here (JSON)')
    parser.add_argument('--quick', action='store_true')
    args = parser.parse_args(argv)
    rows = []
    for benchmark, arguments in (QUICK if args.quick else FULL):
        rows.extend(run(benchmark, arguments))
        if args.out:
            with open(args.out, 'w') as f:
                json.dump(rows, f, indent=1)
    found = verdicts(rows)
    for target, figure, met in found:
        print('%-4s %-72s %s' % ('met' if met else 'NOT', target, figure))
    print('# %d of %d targets met' % (sum(m for _t, _f, m in found),
                                      len(found)))
    return 0 if all(m for _t, _f, m in found) else 1


if __name__ == '__main__':
    sys.exit(main())
