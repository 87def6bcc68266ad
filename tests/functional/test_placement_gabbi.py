"""Placement's own HTTP tests (its gabbi files, run by
../shared/placement-gabbi/run_gabbits.py) against allocworker-api started
as a user starts it: the REST shim's acceptance.

The runner and the openstack-placement wheel that carries the YAML files
live outside this repository; the wheel is installed into .venv-gabbi on
first use. Without ../shared the test skips and says so.
"""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
RUNNER = os.path.join(ROOT, '..', 'shared', 'placement-gabbi',
                      'run_gabbits.py')
VENV = os.path.join(ROOT, '.venv-gabbi')
PACKAGES = ['openstack-placement==16.0.0', 'gabbi==4.2.3']
SERVER = os.path.join(ROOT, 'tools', 'placement-test-server.sh')

# Placement tests that exercise what the shim does not offer yet, by file;
# each must fail, so the list shrinks as the shim grows.
KNOWN_GAPS = {}


def _gabbi_python():
    python = os.path.join(VENV, 'bin', 'python')
    stamp = os.path.join(VENV, '.installed')
    if not os.path.exists(stamp):
        subprocess.run([sys.executable, '-m', 'venv', VENV], check=True)
        subprocess.run([python, '-m', 'pip', 'install', '-q',
                        '--disable-pip-version-check'] + PACKAGES,
                       check=True, timeout=900)
        open(stamp, 'w').close()
    return python


@pytest.fixture(scope='module')
def placement_python():
    if not os.path.exists(RUNNER):
        pytest.skip('%s is absent: Placement\'s gabbi runner comes with '
                    'the shared folder beside the checkout' % RUNNER)
    return _gabbi_python()


def test_placement_recommended_gabbits_pass(placement_python, tmp_path):
    report = tmp_path / 'gabbi.json'
    result = subprocess.run(
        [sys.executable, RUNNER, '--placement-python', placement_python,
         '--start-cmd', '%s {dir} {port} {db}' % SERVER,
         '--set', 'recommended', '--json-out', str(report),
         '--log-dir', str(tmp_path / 'logs')],
        capture_output=True, text=True, timeout=1200)
    files = json.loads(report.read_text())['files']
    failed = {}
    for record in files:
        bad = [t['test'] for t in record.get('tests', [])
               if t['result'] not in ('pass', 'skip')]
        if bad or record.get('error'):
            failed[record['file']] = bad or [record.get('error')]
    unexpected = {f: [t for t in tests if t not in KNOWN_GAPS.get(f, ())]
                  for f, tests in failed.items()}
    unexpected = {f: t for f, t in unexpected.items() if t}
    closed = {f: [t for t in tests if t not in failed.get(f, ())]
              for f, tests in KNOWN_GAPS.items()}
    closed = {f: t for f, t in closed.items() if t}
    assert not unexpected and not closed, (
        'failing Placement tests (file: tests): %s\nknown gaps that now '
        'pass (remove them from KNOWN_GAPS): %s\n%s'
        % (json.dumps(unexpected, indent=1), json.dumps(closed, indent=1),
           result.stdout[-4000:] + result.stderr[-2000:]))
    total = sum(r.get('ran', 0) for r in files)
    assert total == 293, result.stdout[-2000:]
