"""Database faults: MariaDB restarted under load (as PostgreSQL is in
test_faults.py), and a deadlock between a worker and another writer that
the retry policy settles in a fresh transaction, on both servers."""

import subprocess
import threading
import time
import uuid

import pytest
import sqlalchemy as sa

from tests.faults import load as faults
from tests.functional.helpers import alloc_item
from tests.functional.helpers import provider

BACKENDS = ['postgresql', 'mysql']
MARIADBD = '/usr/sbin/mariadbd'


@pytest.fixture
def hosts(rpc):
    return [provider(rpc, {'VCPU': {'total': 100000}})[0] for _ in range(4)]


def _mariadb_restart():
    """Stop and start the machine's MariaDB the way it was started."""
    subprocess.run(['start-stop-daemon', '--stop', '--exec', MARIADBD,
                    '--retry', 'TERM/60/KILL/5'], check=True, timeout=90)
    subprocess.run(['start-stop-daemon', '--start', '--oknodo',
                    '--background', '--exec', MARIADBD], check=True,
                   timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ping = subprocess.run(['mariadb-admin', '-uroot', '-h127.0.0.1',
                               'ping'], capture_output=True)
        if ping.returncode == 0:
            return
        time.sleep(0.5)
    raise AssertionError('MariaDB did not come back')


def test_mariadb_restart_mid_load(backend, rpc, hosts):
    if backend != 'mysql':
        pytest.skip('PostgreSQL restart: test_faults.py')

    def restart():
        began = time.monotonic()
        _mariadb_restart()
        print('\nMariaDB down and up again in %.1f s'
              % (time.monotonic() - began))
    faults.database_restart_under_load(rpc, hosts, 'MariaDB restart',
                                       restart)


def test_deadlock_with_another_writer_is_retried_afresh(
        backend, database, rpc):
    """The worker locks providers in id order; another writer holding the
    second and then asking for the first closes a cycle. The server picks
    the worker's transaction as the victim (PostgreSQL: the first waiter
    to check; InnoDB: the lighter one, so the other writer first writes a
    ballast of rows); the worker retries in a new transaction and commits
    once the other writer is done."""
    first, _ = provider(rpc, {'VCPU': {'total': 10}})
    second, _ = provider(rpc, {'VCPU': {'total': 10}})
    engine = sa.create_engine(database, poolclass=sa.pool.NullPool)
    ids = {}
    with engine.connect() as conn:
        for row in conn.execute(sa.text(
                'SELECT uuid, id FROM providers WHERE uuid IN '
                '(:a, :b)'), {'a': first, 'b': second}):
            ids[row.uuid] = row.id
        conn.execute(sa.text('CREATE TABLE deadlock_ballast (n INTEGER)'))
        conn.commit()
    low, high = sorted(ids.values())
    answer = {}
    consumer = str(uuid.uuid4())
    item = alloc_item(consumer, {first: {'VCPU': 1}, second: {'VCPU': 1}})

    def allocate():
        answer.update(rpc.call('allocate', items=[item], rpc_timeout=60))

    lock = 'SELECT id FROM providers WHERE id = :id FOR UPDATE'
    with engine.connect() as other:
        if backend == 'mysql':
            other.execute(sa.text('INSERT INTO deadlock_ballast VALUES (:n)'),
                          [{'n': n} for n in range(2000)])
        else:
            other.execute(sa.text("SET deadlock_timeout = '10s'"))
        other.execute(sa.text(lock), {'id': high})
        worker_call = threading.Thread(target=allocate)
        worker_call.start()
        # The worker takes `low` and waits for `high`; PostgreSQL looks
        # for a cycle once, deadlock_timeout (1 s) after a wait began.
        time.sleep(0.5)
        began = time.monotonic()
        other.execute(sa.text(lock), {'id': low})   # not the victim
        waited = time.monotonic() - began
        assert not answer   # still waiting for `high`
        other.rollback()
    worker_call.join(60)
    engine.dispose()
    print('\n%s deadlock: the other writer got its lock after %.1f s; the '
          'worker answered %s' % (backend, waited, answer['items'][0]))
    assert answer['items'][0]['status'] == 200
    assert answer['items'][0]['consumer_generation'] == 1
