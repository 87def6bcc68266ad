"""HTTP peers measured in the same run: OpenStack Placement 16.0.0 from
PyPI and allocworker-api, both under uWSGI with the settings Placement's
install guide gives (``-M --http ... --processes 2 --threads 10``, the
processes one per core), each on a fresh PostgreSQL database of its own,
Placement tuned for a large cloud (``placement_server.TUNING``), and a
no-op WSGI application under the same settings as their ceiling.

uWSGI comes from PyPI's ``pyuwsgi`` (binary wheels: nothing to compile),
installed on first use into the venv that serves the application;
Placement gets a venv of its own, ``.venv-placement``.
"""

import json
import os
import random
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

from benchmarks import placement_server

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLACEMENT_VENV = os.path.join(ROOT, '.venv-placement')
PLACEMENT = ['openstack-placement==16.0.0', 'psycopg2-binary', 'PyMySQL']
UWSGI = 'pyuwsgi'
# Placement's install-from-PyPI guide: uwsgi -M --http :8778 --wsgi-file
# placement-api --processes 2 --threads 10 (16.0.0 ships the module
# placement.wsgi.api instead of the script). Its 2 processes are one per
# core of a 2-core machine, so on a larger one they would leave cores
# idle: one process per core, as an operator sizes it
# (AW_BENCH_UWSGI_PROCESSES overrides).
PROCESSES = int(os.environ.get('AW_BENCH_UWSGI_PROCESSES') or
                os.cpu_count() or 2)
THREADS = 10


CONSTRAINTS = os.path.join(ROOT, 'constraints.txt')


def pinned(name):
    """``name==version`` as constraints.txt pins it."""
    with open(CONSTRAINTS) as f:
        for line in f:
            if line.lower().startswith(name.lower() + '=='):
                return line.strip()
    return name


def pip_install(python, packages, constrained=True):
    """pip into ``python``'s environment (this checkout's pins unless
    ``constrained`` is false: Placement brings its own requirements)."""
    subprocess.run([python, '-m', 'pip', 'install', '-q',
                    '--disable-pip-version-check'] + (
                        ['-c', CONSTRAINTS] if constrained else []) + packages,
                   check=True, timeout=900)


def ensure_uwsgi(venv_bin):
    """uWSGI in the venv whose ``bin`` is ``venv_bin`` (pip, first use)."""
    if not os.path.exists(os.path.join(venv_bin, 'uwsgi')):
        pip_install(os.path.join(venv_bin, 'python'), [UWSGI])
    return os.path.join(venv_bin, 'uwsgi')


def placement_bin():
    """``.venv-placement/bin`` with Placement, its database drivers and
    uWSGI (made on first use, completed when the list grows)."""
    stamp = os.path.join(PLACEMENT_VENV, '.installed')
    packages = PLACEMENT + [pinned(UWSGI)]
    wanted = '\n'.join(packages)
    installed = None
    if os.path.exists(stamp):
        with open(stamp) as f:
            installed = f.read()
    if installed != wanted:
        if not os.path.exists(os.path.join(PLACEMENT_VENV, 'bin', 'python')):
            subprocess.run([sys.executable, '-m', 'venv', PLACEMENT_VENV],
                           check=True)
        pip_install(os.path.join(PLACEMENT_VENV, 'bin', 'python'),
                    packages, constrained=False)
        with open(stamp, 'w') as f:
            f.write(wanted)
    return os.path.join(PLACEMENT_VENV, 'bin')


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Uwsgi(object):
    """One uWSGI master serving ``module`` over HTTP on 127.0.0.1."""

    def __init__(self, name, venv_bin, module, scratch, env=None):
        self.name = name
        self.port = free_port()
        self.base = 'http://127.0.0.1:%d' % self.port
        self.log = os.path.join(scratch, '%s-uwsgi.log' % name)
        command = [ensure_uwsgi(venv_bin), '--master',
                   '--http', '127.0.0.1:%d' % self.port,
                   '--module', module, '--processes', str(PROCESSES),
                   '--threads', str(THREADS),
                   # housekeeping only: stop on SIGTERM, fail if the
                   # application does not load, log to a file
                   '--die-on-term', '--need-app', '--logto', self.log]
        self.process = subprocess.Popen(
            command, env=dict(os.environ, **(env or {})),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, cwd=scratch)
        self._wait()

    def _wait(self, seconds=120):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                urllib.request.urlopen(self.base + '/', timeout=2).read()
                return
            except urllib.error.HTTPError:
                return
            except OSError:
                time.sleep(0.3)
        with open(self.log) as f:
            raise RuntimeError('%s under uWSGI did not start:\n%s'
                               % (self.name, f.read()[-3000:]))

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()


def start_placement(database, scratch, venv_bin=None):
    """Placement 16 on ``database`` (schema by placement-manage), tuned
    for a large cloud (``placement_server.TUNING``), from ``venv_bin``
    (default ``.venv-placement/bin``)."""
    venv_bin = venv_bin or placement_bin()
    conf_dir = os.path.join(scratch, 'placement')
    os.makedirs(conf_dir, exist_ok=True)
    with open(os.path.join(conf_dir, 'placement.conf'), 'w') as f:
        f.write('[DEFAULT]\nlog_file = %s\n[api]\nauth_strategy = noauth2\n'
                '[placement_database]\nconnection = %s\n%s'
                % (os.path.join(scratch, 'placement.log'), database,
                   placement_server.placement_section()))
    env = {'OS_PLACEMENT_CONFIG_DIR': conf_dir}
    subprocess.run([os.path.join(venv_bin, 'placement-manage'),
                    '--config-file', os.path.join(conf_dir, 'placement.conf'),
                    'db', 'sync'], check=True, timeout=300,
                   capture_output=True)
    return Uwsgi('placement', venv_bin, 'placement.wsgi.api:application',
                 scratch, env)


def start_allocworker_api(config_file, scratch):
    """allocworker-api's WSGI application (this checkout's venv)."""
    return Uwsgi('allocworker-api', os.path.dirname(sys.executable),
                 'allocworker.cmd.wsgi:application', scratch,
                 {'ALLOCWORKER_CONFIG_FILES': config_file})


def start_noop(scratch):
    return Uwsgi('noop-wsgi', os.path.dirname(sys.executable),
                 'benchmarks.noop_wsgi:application', scratch,
                 {'PYTHONPATH': ROOT})


class Refused(RuntimeError):
    """An answer with a status the caller did not expect."""

    def __init__(self, message, status, body):
        super(Refused, self).__init__(message)
        self.status, self.body = status, body


class HttpPeer(object):
    """A Placement-API server driven the same way whoever serves it."""

    def __init__(self, server, version='1.28'):
        self.server = server
        self.base = server.base
        self.version = version
        self.hosts = []
        self.consumers = []
        self._lock = threading.Lock()

    def call(self, method, path, body=None, version=None, expect=None):
        """The answer's (status, decoded JSON or None); raises on an
        unexpected status (any 2xx unless ``expect`` names them)."""
        request = urllib.request.Request(
            self.base + path, method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={'x-auth-token': 'admin',
                     'openstack-api-version': 'placement %s'
                     % (version or self.version),
                     'accept': 'application/json',
                     'content-type': 'application/json'})
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        if (status not in expect) if expect else not 200 <= status < 300:
            raise Refused('%s %s %s: %d %s' % (
                self.server.name, method, path, status, raw[:300]), status,
                raw)
        return status, json.loads(raw) if raw else None

    def create_provider(self, name, inventories=None, parent=None,
                        provider_uuid=None):
        provider = provider_uuid or str(uuid.uuid4())
        body = {'uuid': provider, 'name': name}
        if parent:
            body['parent_provider_uuid'] = parent
        self.call('POST', '/resource_providers', body, version='1.20')
        if inventories:
            self.call('PUT', '/resource_providers/%s/inventories' % provider,
                      {'resource_provider_generation': 0,
                       'inventories': inventories})
        return provider

    def setup_hosts(self, count):
        for n in range(count):
            self.hosts.append(self.create_provider(
                'bench-%d' % n, {'VCPU': {'total': 2 ** 31 - 1},
                                 'MEMORY_MB': {'total': 2 ** 31 - 1}}))

    def put_allocations(self):
        consumer = str(uuid.uuid4())
        self.call('PUT', '/allocations/%s' % consumer, {
            'allocations': {random.choice(self.hosts): {'resources': {
                'VCPU': 1, 'MEMORY_MB': 512}}},
            'project_id': 'bench', 'user_id': 'bench',
            'consumer_generation': None}, expect=(204,))
        with self._lock:
            self.consumers.append(consumer)

    def get_allocations(self):
        _, body = self.call('GET', '/allocations/%s'
                            % random.choice(self.consumers))
        if not body['allocations']:
            raise RuntimeError('%s lost an allocation' % self.server.name)


class Peers(object):
    """The HTTP rows: ``PUT`` and ``GET /allocations/{consumer}`` on
    Placement and on allocworker-api (ratios to Placement's figure of the
    same run, the two measured in turns), and a no-op WSGI application as
    the uWSGI ceiling (the ratio of Placement's rows)."""

    def __init__(self, api_config, placement_database, scratch, hosts):
        self.servers = []
        try:
            self.noop = HttpPeer(self._started(start_noop(scratch)))
            self.placement = HttpPeer(self._started(
                start_placement(placement_database, scratch)))
            self.api = HttpPeer(self._started(
                start_allocworker_api(api_config, scratch)))
            for peer in (self.placement, self.api):
                peer.setup_hosts(hosts)
        except Exception:
            self.close()
            raise

    def _started(self, server):
        self.servers.append(server)
        return server

    def run(self, bench, c):
        ceiling = bench.record('noop_uwsgi_roundtrip', c, bench.drive(
            lambda: self.noop.call('GET', '/'), c), None)
        placement, api = bench.drive_in_turns(
            self.placement.put_allocations, self.api.put_allocations, c)
        put = bench.record('placement_put_allocations', c, placement,
                           ceiling)
        bench.record('uwsgi_api_put_allocations', c, api, put)
        placement, api = bench.drive_in_turns(
            self.placement.get_allocations, self.api.get_allocations, c)
        get = bench.record('placement_get_allocations', c, placement,
                           ceiling)
        bench.record('uwsgi_api_get_allocations', c, api, get)

    def close(self):
        for server in self.servers:
            server.stop()
