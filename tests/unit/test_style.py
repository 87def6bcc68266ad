"""flake8 over the whole tree, so style is checked by the one test
command like everything else."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def test_flake8_is_clean():
    result = subprocess.run(
        [sys.executable, '-m', 'flake8', 'allocworker', 'tests',
         'benchmarks'], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
