"""The benchmark harness itself works (its figures are not judged here:
speed is measured by benchmarks/, never asserted by tests). The peers
(Placement and uWSGI, ``--peers``, and the candidates benchmark beside
Placement) install software on first use and take minutes, so they are
not run here; the candidates benchmark runs on allocworker-api alone."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import cpu  # noqa: E402

WORKLOADS = {'noop_rpc_roundtrip', 'noop_rpc_100_items', 'db_commit',
             'allocate_single', 'allocate_batch_100_independent',
             'allocate_batch_100_atomic', 'get_allocations_one',
             'mixed_70w_30r', 'noop_http_roundtrip', 'http_put_allocations'}


def test_quick_run_prints_one_json_row_per_figure_and_a_chart(tmp_path):
    chart = tmp_path / 'chart.png'
    result = subprocess.run(
        [sys.executable, '-m', 'benchmarks.run', '--json', '--workers', '1',
         '--seconds', '0.5', '--concurrency', '1', '--chart', str(chart)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[
        -2000:]
    rows = [json.loads(line) for line in result.stdout.splitlines()
            if line.startswith('{')]
    assert {r['workload'] for r in rows} == WORKLOADS
    for row in rows:
        assert {'workload', 'concurrency', 'per_s', 'p50_ms', 'p99_ms',
                'ceiling_per_s', 'ratio', 'cpu_ms', 'cpu_ms_own'} <= set(row)
        assert row['errors'] == 0 and row['per_s'] > 0
        if not row['workload'].startswith(('noop', 'db_')):
            assert row['ratio'] == round(row['per_s'] /
                                         row['ceiling_per_s'], 3)
            assert row['cpu_x_ceiling'] > 0, row
        # The client process alone spends CPU on every call it makes.
        assert row['cpu_ms_parts']['client'] > 0, row
        assert row['cpu_ms'] > 0 and row['cpu_ms_own'] > 0, row
        assert set(row['cpu_ms_parts']) == set(cpu.PARTS)
    only = subprocess.run(
        [sys.executable, '-m', 'benchmarks.run', '--json', '--workers', '1',
         '--seconds', '0.3', '--concurrency', '1', '--only',
         'get_allocations'], cwd=ROOT, capture_output=True, text=True,
        timeout=300)
    assert only.returncode == 0, only.stderr[-2000:]
    assert {json.loads(line)['workload'] for line in only.stdout.splitlines()
            if line.startswith('{')} == {
        'noop_rpc_roundtrip', 'noop_rpc_100_items', 'get_allocations_one'}
    with open(chart, 'rb') as f:
        assert f.read(8) == b'\x89PNG\r\n\x1a\n'


def test_cpu_meter_counts_this_process_and_its_children():
    meter = cpu.Meter()
    before = meter.snapshot()
    # A child that works, says so, and stays alive until told to stop.
    child = subprocess.Popen(
        [sys.executable, '-c', 'import sys\n'
         'sum(i * i for i in range(3 * 10 ** 6))\n'
         'print("done", flush=True)\nsys.stdin.read()'],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == 'done\n'
        sum(i * i for i in range(3 * 10 ** 6))
        spent = cpu.Meter.spent(before, meter.snapshot())
    finally:
        child.communicate('')
    assert spent['client'] > 0.05, spent
    assert spent['servers'] > 0.05, spent
    assert spent['own'] == sum(spent[p] for p in cpu.PARTS)
    assert spent['machine'] >= spent['client'] + spent['servers'] - 0.05


def test_candidates_benchmark_answers_every_request_with_candidates():
    result = subprocess.run(
        [sys.executable, '-m', 'benchmarks.candidates', '--json', '--trees',
         '3', '6', '--backend', 'sqlite', '--no-placement', '--seconds',
         '0.1', '--calls', '2'], cwd=ROOT, capture_output=True, text=True,
        timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [json.loads(line) for line in result.stdout.splitlines()
            if line.startswith('{')]
    assert [(r['trees'], r['workload']) for r in rows] == [
        (trees, workload) for trees in (3, 6)
        for workload in ('unnumbered', 'granular', 'nova')]
    # Each tree offers its two NUMA children with the shared disk: VCPU
    # and MEMORY_MB from either child unnumbered, one child per group
    # under group_policy=isolate.
    per_tree = {'unnumbered': 4, 'granular': 2, 'nova': 4}
    for row in rows:
        assert row['status'] == 200 and row['refused'] is None, row
        assert row['candidates'] == per_tree[row['workload']] * row[
            'trees'], row
        assert row['requests'] >= 2 and row['p50_ms'] > 0, row
        assert row['rss_peak_mb'] > 0 and row['ratio'] is None, row


def test_metrics_run_measures_both_workers():
    result = subprocess.run(
        [sys.executable, '-m', 'benchmarks.run', '--json', '--workers', '1',
         '--seconds', '0.6', '--concurrency', '1', '--only',
         'allocate_single', '--metrics'], cwd=ROOT, capture_output=True,
        text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {row['workload']: row for row in (
        json.loads(line) for line in result.stdout.splitlines()
        if line.startswith('{'))}
    off, on = (rows['allocate_single_metrics_%s' % s] for s in ('off', 'on'))
    assert on['ratio'] == round(on['per_s'] / off['per_s'], 3)
    assert off['cpu_ms_parts']['worker'] > 0 < on['cpu_ms_parts']['worker']
    assert "worker processes' CPU per call" in result.stdout


def test_claims_filtered_writes_one_row_per_shape_with_no_misplaced_claim(
        tmp_path):
    out = tmp_path / 'claims_filtered.json'
    result = subprocess.run(
        [sys.executable, '-m', 'benchmarks.claims_filtered', '--trees',
         '200', '--workers', '1', '--seconds', '0.4', '--window', '0.2',
         '--out', str(out)], cwd=ROOT, capture_output=True, text=True,
        timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[
        -2000:]
    with open(out) as f:
        document = json.load(f)
    assert document['benchmark'] == 'claims_filtered'
    assert len(document['commit']['sha']) == 40
    assert isinstance(document['commit']['dirty'], bool)
    assert document['command'][-2:] == ['--out', str(out)]
    assert document['machine']['cores'] > 0
    assert set(document['machine']['loadavg']) == {'start', 'end'}
    assert [(r['row'], r['concurrency']) for r in document['rows']] == [
        ('plain', 1), ('not_disabled', 1), ('member_of', 1),
        ('required_rare', 1), ('root_required_rare', 1), ('in_tree', 1),
        ('member_of', 16)]
    for row in document['rows']:
        for kind in ('claim', 'allocate'):
            figures = row[kind]
            assert figures['calls'] > 0 and figures['p50_ms'] > 0, row
            assert figures['worker_cpu_ms'] > 0, row
            assert (figures['non_200'], figures['violations'],
                    figures['errors']) == (0, 0, 0), row
        assert row['ratio']['p50_ms'] == round(
            row['claim']['p50_ms'] / row['allocate']['p50_ms'], 2)
    # The table has a line per row.
    assert sum(line.startswith(('plain', 'member_of', 'in_tree'))
               for line in result.stdout.splitlines()) == 4


def test_nova_mix_writes_a_row_with_no_misplaced_boot(tmp_path):
    # allocworker alone: the Placement side installs Placement on first use.
    out = tmp_path / 'nova_mix.json'
    result = subprocess.run(
        [sys.executable, '-m', 'benchmarks.nova_mix', '--trees', '200',
         '--workers', '1', '--concurrency', '4', '--seconds', '0.6',
         '--window', '0.3', '--no-placement', '--out', str(out)], cwd=ROOT,
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[
        -2000:]
    with open(out) as f:
        document = json.load(f)
    assert document['benchmark'] == 'nova_mix'
    [row] = document['rows']
    assert row['side'] == 'allocworker' and row['boots'] > 0, row
    assert row['boots_per_s'] > 0 and row['shapes']['all'] >= row['boots']
    assert (row['failed'], row['errors'], row['misplaced']) == ({}, 0, 0), row
    assert row['cloud'] == {'zones': [100, 60, 30, 10], 'gpu': 7,
                            'disabled': 5, 'full': 20}, row
    assert row['tuning']['worker processes'] == 1
