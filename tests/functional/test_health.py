"""Health checks against the real services: the API's /healthcheck
(oslo.middleware, the database backend, draining by file) and the
worker's probe on its metrics port, which fails when the database or the
broker cannot be reached."""

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from tests.functional import services

BACKENDS = ['postgresql']


def probe(url):
    """(HTTP status, body) of GET ``url``."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def wait_for_probe(url, status, seconds=30):
    deadline = time.monotonic() + seconds
    while True:
        try:
            answer = probe(url)
        except OSError:
            answer = (None, '')
        if answer[0] == status or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


@pytest.fixture
def own_database(backend, scratch):
    """A synced database this test may drop while services use it."""
    with services.fresh_database(backend, scratch) as url:
        config = services.write_config('%s/own-sync.conf' % scratch, url,
                                       'unused')
        services.manage(config, 'db', 'sync')
        yield url


def drop(url):
    """Make the database at ``url`` go away under its users."""
    import sqlalchemy as sa
    server, name = url.rsplit('/', 1)
    engine = sa.create_engine(server + '/postgres',
                              isolation_level='AUTOCOMMIT',
                              poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        conn.exec_driver_sql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = '%s'" % name)
        conn.exec_driver_sql('DROP DATABASE %s (FORCE)' % name)
    engine.dispose()


def start_worker(scratch, db_url, metrics_port, rabbit_url=None):
    topic = 'aw-health-%d' % metrics_port
    # A directory of the test's own: a worker killed outright leaves it.
    extra = '[metrics]\nport = %d\ndirectory = %s/metrics-%d\n' % (
        metrics_port, scratch, metrics_port)
    config = services.write_config('%s/%s.conf' % (scratch, topic), db_url,
                                   topic, workers=2, extra=extra)
    if rabbit_url:
        with open(config) as f:
            text = f.read().replace(services.RABBIT_URL, rabbit_url)
        with open(config, 'w') as f:
            f.write(text)
    return subprocess.Popen(
        [os.path.join(services.BIN, 'allocworker-worker'), '--config-file',
         config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)


def start_api(scratch, db_url, drain):
    port = services.free_port()
    config = services.write_config(
        '%s/health-api.conf' % scratch, db_url, 'unused',
        extra='[api]\nauth_strategy = noauth2\nport = %d\n'
              '[healthcheck]\ndisable_by_file_path = %s\n' % (port, drain))
    server = subprocess.Popen(
        [os.path.join(services.BIN, 'allocworker-api'), '--config-file',
         config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return server, 'http://127.0.0.1:%d/healthcheck' % port


def stop(process, signum=signal.SIGTERM):
    os.killpg(process.pid, signum) if signum == signal.SIGKILL \
        else process.send_signal(signum)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return process.returncode


def test_probes_drain_by_file_and_fail_without_the_database(
        own_database, scratch):
    drain = os.path.join(scratch, 'drain-api')
    api, api_url = start_api(scratch, own_database, drain)
    port = services.free_port()
    worker = start_worker(scratch, own_database, port)
    worker_url = 'http://127.0.0.1:%d/healthcheck' % port
    try:
        assert wait_for_probe(api_url, 200) == (200, 'OK\nOK')
        assert wait_for_probe(worker_url, 200) == (200, 'OK\nOK\nOK')
        # Draining the API leaves the worker's probe alone.
        open(drain, 'w').close()
        assert probe(api_url) == (503, 'DISABLED BY FILE\nOK')
        assert probe(worker_url)[0] == 200
        os.remove(drain)
        assert probe(api_url)[0] == 200
        drop(own_database)
        assert probe(api_url) == (503, 'OK\nDATABASE UNREACHABLE')
        assert probe(worker_url) == (
            503, 'DATABASE UNREACHABLE\nOK\nOK')
    finally:
        stop(api)
        worker_exit = stop(worker)
    assert worker_exit == 0


def test_worker_probe_fails_without_the_broker(scratch):
    nobody = services.free_port()
    port = services.free_port()
    worker = start_worker(
        scratch, 'sqlite:///%s/broker-less.sqlite' % scratch, port,
        'rabbit://guest:guest@127.0.0.1:%d/' % nobody)
    url = 'http://127.0.0.1:%d/healthcheck' % port
    try:
        assert wait_for_probe(url, 503) == (
            503, 'OK\nBROKER UNREACHABLE\nOK')
    finally:
        # Its processes keep trying to connect; nothing to finish.
        stop(worker, signal.SIGKILL)
