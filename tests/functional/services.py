"""The real services functional tests run against: databases made fresh
per test module, worker processes started the way a user starts them, and
a bare oslo.messaging client that knows only the design's wire contract."""

import contextlib
import os
import socket
import signal
import subprocess
import sys
import time
import uuid

import oslo_messaging as messaging
import sqlalchemy as sa

BIN = os.path.dirname(sys.executable)
RABBIT_URL = os.environ.get('AW_TEST_RABBIT_URL',
                            'rabbit://guest:guest@127.0.0.1:5672/')
SERVER_URLS = {
    'postgresql': os.environ.get('AW_TEST_POSTGRESQL_URL',
                                 'postgresql+psycopg2://root@127.0.0.1:5432'),
    'mysql': os.environ.get('AW_TEST_MYSQL_URL',
                            'mysql+pymysql://root@127.0.0.1:3306'),
}
BACKENDS = ('sqlite', 'postgresql', 'mysql')


@contextlib.contextmanager
def fresh_database(backend, scratch):
    """A new, empty database on ``backend``; dropped afterwards."""
    if backend == 'sqlite':
        yield 'sqlite:///%s' % os.path.join(scratch, 'allocworker.sqlite')
        return
    name = 'aw_test_%s' % uuid.uuid4().hex[:12]
    server = SERVER_URLS[backend]
    admin_db = 'postgres' if backend == 'postgresql' else ''
    # No pool: the server may have been restarted by the time we drop.
    engine = sa.create_engine('%s/%s' % (server, admin_db),
                              isolation_level='AUTOCOMMIT',
                              poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        conn.exec_driver_sql('CREATE DATABASE %s' % name)
    suffix = '?charset=utf8mb4' if backend == 'mysql' else ''
    try:
        yield '%s/%s%s' % (server, name, suffix)
    finally:
        with engine.connect() as conn:
            if backend == 'postgresql':
                conn.exec_driver_sql(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = '%s' AND pid <> pg_backend_pid()" % name)
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % name)
        engine.dispose()


def free_port():
    """A TCP port nobody listens on right now, on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_for_http(base, seconds=60):
    """Wait until an HTTP server answers at ``base`` (any status counts)."""
    import urllib.error
    import urllib.request
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(base + '/', timeout=1)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError('nothing answers at %s' % base)


def start_api(db_url, scratch, name='api', stderr=subprocess.PIPE,
              extra='', auth='noauth2'):
    """allocworker-api with ``auth`` (its ``[api] auth_strategy``) on a
    free port over ``db_url``, as a user starts it: (its process, its
    port), once it answers. ``extra``: more configuration."""
    port = free_port()
    config = write_config(
        '%s/%s.conf' % (scratch, name), db_url, 'unused',
        extra='[api]\nauth_strategy = %s\nport = %d\n%s'
        % (auth, port, extra))
    server = subprocess.Popen(
        [os.path.join(BIN, 'allocworker-api'), '--config-file', config],
        stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        wait_for_http('http://127.0.0.1:%d' % port)
    except AssertionError:
        server.kill()
        raise
    return server, port


def write_config(path, db_url, topic, workers=1, extra='',
                 transport_url=None):
    with open(path, 'w') as f:
        f.write('[DEFAULT]\n'
                'transport_url = %s\n'
                'state_path = %s\n'
                'log_file = %s\n'
                'host = %s\n'
                '[database]\nconnection = %s\n'
                '[worker]\ntopic = %s\nworkers = %d\n%s'
                % (transport_url or RABBIT_URL, os.path.dirname(path),
                   os.path.join(os.path.dirname(path), 'worker.log'),
                   topic, db_url, topic, workers, extra))
    return path


def manage(config_file, *args, check=True):
    """Run allocworker-manage as an operator would."""
    result = subprocess.run(
        [os.path.join(BIN, 'allocworker-manage'), '--config-file',
         config_file] + list(args),
        capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError('allocworker-manage %s failed (%d): %s'
                             % (' '.join(args), result.returncode,
                                result.stderr))
    return result


def table(printed):
    """The cells of a table allocworker-manage printed, a list per line
    (its header first)."""
    return [[cell.strip() for cell in line.strip('|').split('|')]
            for line in printed.splitlines() if line.startswith('|')]


# Every BareClient made, until ``close_clients``: each holds broker
# connections (a pool, one more per thread that calls at once) until its
# transport is cleaned up, and the shared node refuses new connections
# once its file descriptors run out (1024 here).
_clients = []


def close_clients():
    """Clean up the transports of every BareClient made so far."""
    while _clients:
        try:
            _clients.pop().transport.cleanup()
        except Exception:
            pass  # a broker already gone: nothing left to close


class BareClient(object):
    """What another service writes from design.md alone: oslo.messaging,
    a topic, version 1.0 and a context dict."""

    def __init__(self, topic, timeout=30, url=None):
        from oslo_config import cfg
        self.transport = messaging.get_rpc_transport(cfg.CONF,
                                                     url=url or RABBIT_URL)
        _clients.append(self)
        target = messaging.Target(topic=topic, version='1.0')
        self.client = messaging.get_rpc_client(self.transport, target,
                                               timeout=timeout)
        self.context = {'request_id': 'req-%s' % uuid.uuid4(),
                        'roles': ['admin'], 'project_id': 'test-project',
                        'user_id': 'test-user'}

    def call(self, method, context=None, rpc_timeout=None, server=None,
             **kwargs):
        """Call ``method``; ``server`` picks one worker process by name."""
        options = {k: v for k, v in (('timeout', rpc_timeout),
                                     ('server', server)) if v}
        client = self.client.prepare(**options) if options else self.client
        return client.call(context or self.context, method, **kwargs)

    def cast(self, method, **kwargs):
        self.client.cast(self.context, method, **kwargs)

    def __getattr__(self, method):
        return lambda **kwargs: self.call(method, **kwargs)


class Worker(object):
    """allocworker-worker as a user starts it."""

    def __init__(self, config_file):
        self.config_file = config_file
        self.process = None

    def start(self, client, timeout=60):
        self.process = subprocess.Popen(
            [os.path.join(BIN, 'allocworker-worker'), '--config-file',
             self.config_file],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise AssertionError('worker exited: %s'
                                     % self.process.stderr.read())
            try:
                client.call('list_resource_classes', rpc_timeout=2)
                return self
            except messaging.MessagingTimeout:
                continue
        raise AssertionError('worker did not answer within %ds' % timeout)

    def stop(self, timeout=60):
        """SIGTERM, then the exit code (0 for a clean shutdown)."""
        if self.process is None or self.process.poll() is not None:
            return self.process and self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            raise

    def child_pids(self):
        out = subprocess.run(['pgrep', '-P', str(self.process.pid)],
                             capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]


def new_uuid():
    return str(uuid.uuid4())
