"""The real ``openstack`` CLI (python-openstackclient with osc-placement)
drives allocworker-api as it drives Placement: provider create and list,
inventory set, usage show, rename, delete.

The CLI lives in its own virtualenv, .venv-osc, made on first use.
"""

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import tempfile

import pytest

from tests.functional import services

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
VENV = os.path.join(ROOT, '.venv-osc')
PACKAGES = ['python-openstackclient==10.5.0', 'osc-placement==4.9.1']
SERVER = os.path.join(ROOT, 'tools', 'placement-test-server.sh')


@contextlib.contextmanager
def venv_lock():
    """Held while .venv-osc is made or added to: test modules that share
    it (test_osc_placement_suite.py) may run in parallel processes."""
    os.makedirs(VENV, exist_ok=True)
    with open(os.path.join(VENV, '.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _openstack():
    stamp = os.path.join(VENV, '.installed')
    with venv_lock():
        if not os.path.exists(stamp):
            subprocess.run([sys.executable, '-m', 'venv', VENV], check=True)
            subprocess.run([os.path.join(VENV, 'bin', 'python'), '-m', 'pip',
                            'install', '-q', '--disable-pip-version-check']
                           + PACKAGES, check=True, timeout=900)
            open(stamp, 'w').close()
    return os.path.join(VENV, 'bin', 'openstack')


@pytest.fixture(scope='module')
def cli():
    binary = _openstack()
    port = services.free_port()
    scratch = tempfile.mkdtemp(prefix='aw-osc-')
    server = subprocess.Popen(
        [SERVER, scratch, str(port), os.path.join(scratch, 'aw.sqlite')],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    url = 'http://127.0.0.1:%d' % port
    services.wait_for_http(url)

    def run(*args, version=None):
        command = [binary, '--os-auth-type', 'admin_token',
                   '--os-endpoint', url, '--os-token', 'admin']
        if version:
            command += ['--os-placement-api-version', version]
        result = subprocess.run(command + list(args), capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout) if '-f' in args else result.stdout

    yield run
    os.killpg(server.pid, 15)
    server.wait(timeout=30)


def test_provider_inventory_and_usage_through_the_openstack_cli(cli):
    made = cli('resource', 'provider', 'create', 'compute-1', '-f', 'json')
    assert made['generation'] == 0
    listed = cli('resource', 'provider', 'list', '-f', 'json')
    assert [p['name'] for p in listed] == ['compute-1']
    inventory = cli('resource', 'provider', 'inventory', 'set', made['uuid'],
                    '--resource', 'VCPU=16', '--resource',
                    'MEMORY_MB:allocation_ratio=1.5', '--resource',
                    'MEMORY_MB=8192', '-f', 'json')
    by_class = {i['resource_class']: i for i in inventory}
    assert by_class['VCPU']['total'] == 16
    assert by_class['MEMORY_MB']['allocation_ratio'] == 1.5
    usage = cli('resource', 'provider', 'usage', 'show', made['uuid'],
                '-f', 'json')
    assert {u['resource_class']: u['usage'] for u in usage} == {
        'VCPU': 0, 'MEMORY_MB': 0}
    renamed = cli('resource', 'provider', 'set', made['uuid'], '--name',
                  'compute-one', '-f', 'json', version='1.14')
    assert renamed['name'] == 'compute-one'
    cli('resource', 'provider', 'delete', made['uuid'])
    assert cli('resource', 'provider', 'list', '-f', 'json') == []
