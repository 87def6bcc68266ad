"""The benchmark harness itself works (its figures are not judged here:
speed is measured by benchmarks/, never asserted by tests)."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
WORKLOADS = {'noop_rpc_roundtrip', 'noop_rpc_100_items', 'db_commit',
             'allocate_single', 'allocate_batch_100_independent',
             'allocate_batch_100_atomic', 'get_allocations_one',
             'mixed_70w_30r', 'noop_http_roundtrip', 'http_put_allocations'}


def test_quick_run_prints_one_json_row_per_figure():
    result = subprocess.run(
        [sys.executable, '-m', 'benchmarks.run', '--json', '--workers', '1',
         '--seconds', '0.5', '--concurrency', '1'],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[
        -2000:]
    rows = [json.loads(line) for line in result.stdout.splitlines()
            if line.startswith('{')]
    assert {r['workload'] for r in rows} == WORKLOADS
    for row in rows:
        assert {'workload', 'concurrency', 'per_s', 'p50_ms', 'p99_ms',
                'ceiling_per_s', 'ratio'} <= set(row)
        assert row['errors'] == 0 and row['per_s'] > 0
        if not row['workload'].startswith(('noop', 'db_')):
            assert row['ratio'] == round(row['per_s'] /
                                         row['ceiling_per_s'], 3)
