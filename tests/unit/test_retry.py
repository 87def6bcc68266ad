"""retry.write: tenacity's policy, built once and shared by threads;
exhaustion is 409."""

import threading
import time

from oslo_db import exception as db_exc
import pytest

from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import api as db_api
from allocworker import retry


@pytest.fixture
def attempts():
    CONF.set_override('retry_attempts', 3, 'worker')
    CONF.set_override('retry_max_wait', 0, 'worker')
    yield 3
    CONF.clear_override('retry_attempts', 'worker')
    CONF.clear_override('retry_max_wait', 'worker')


def losing(times, error=db_api.ConcurrentUpdate):
    calls = []

    def fn(value):
        calls.append(value)
        if len(calls) <= times:
            raise error('lost')
        return value
    return fn, calls


@pytest.mark.parametrize('lost', [0, 1, 2])
def test_a_race_is_run_again_until_it_commits(attempts, lost):
    fn, calls = losing(lost, db_exc.DBDeadlock)
    assert retry.write(fn, 'v') == 'v'
    assert calls == ['v'] * (lost + 1)


def test_exhaustion_is_concurrent_update_after_every_attempt(attempts):
    fn, calls = losing(attempts)
    with pytest.raises(codes.Fault) as raised:
        retry.write(fn, 'v')
    assert len(calls) == attempts
    assert raised.value.code == codes.PROVIDER_CONCURRENT_UPDATE
    assert 'gave up after 3 attempts (ConcurrentUpdate)' in \
        raised.value.detail


def test_one_attempt_allowed(attempts):
    CONF.set_override('retry_attempts', 1, 'worker')
    fn, calls = losing(1)
    with pytest.raises(codes.Fault):
        retry.write(fn, 'v')
    assert len(calls) == 1


def test_other_errors_are_not_retried(attempts):
    fn, calls = losing(5, ValueError)
    with pytest.raises(ValueError):
        retry.write(fn, 'v')
    assert len(calls) == 1


def test_threads_count_their_own_attempts(attempts):
    """Two threads losing races at once on the one shared policy: each
    gets its own three attempts (shared counting would exhaust one)."""
    both_lost_once = threading.Barrier(2, timeout=10)
    results, calls = {}, {'a': [], 'b': []}

    def racer(name):
        def fn():
            calls[name].append(1)
            if len(calls[name]) == 1:
                both_lost_once.wait()
            if len(calls[name]) < attempts:
                raise db_api.ConcurrentUpdate('lost')
            return name
        try:
            results[name] = retry.write(fn)
        except codes.Fault as fault:
            results[name] = fault.code

    threads = [threading.Thread(target=racer, args=(n,)) for n in 'ab']
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {'a': 'a', 'b': 'b'}
    assert [len(calls['a']), len(calls['b'])] == [attempts, attempts]


def test_a_changed_setting_takes_effect(attempts):
    fn, calls = losing(3)
    with pytest.raises(codes.Fault):
        retry.write(fn, 'v')
    CONF.set_override('retry_attempts', 4, 'worker')
    fn, calls = losing(3)
    assert retry.write(fn, 'v') == 'v'
    assert len(calls) == 4


@pytest.fixture
def budget(attempts):
    """A database unavailable for longer than this is given up on."""
    # Long enough that a loaded machine's scheduling never spends it
    # between a test's few quick attempts.
    CONF.set_override('retry_unavailable_seconds', 1.0, 'worker')
    yield 1.0
    CONF.clear_override('retry_unavailable_seconds', 'worker')
    retry._unavailable_since = None


def mysql_error(code, message, kind=db_exc.DBError):
    """An oslo.db exception wrapping the driver's error ``code``."""
    import pymysql
    import sqlalchemy as sa
    orig = pymysql.err.OperationalError(code, message)
    return kind(sa.exc.OperationalError('COMMIT', {}, orig))


@pytest.mark.parametrize('error', [
    mysql_error(2013, 'Lost connection to server during query',
                db_exc.DBConnectionError),
    mysql_error(1047, 'WSREP has not yet prepared node for application use',
                db_exc.DBConnectionError),
    mysql_error(1180, 'Got error 6 "No such device or address" during '
                'COMMIT'),
    db_api.ConnectionLost('kept connection lost'),
])
def test_an_unavailable_database_is_waited_for_beyond_the_attempts(
        budget, error, monkeypatch):
    """More failures than retry_attempts (3) while the database fails
    over: the transaction still commits."""
    monkeypatch.setattr(retry, 'UNAVAILABLE_WAIT',
                        retry.tenacity.wait_fixed(0.01))
    fn, calls = losing(5, lambda _message: error)
    assert retry.write(fn, 'v') == 'v'
    assert len(calls) == 6


def test_waits_while_unavailable_grow_to_two_seconds():
    class State(object):
        def __init__(self, n):
            self.attempt_number = n
    ceilings = [max(retry.UNAVAILABLE_WAIT(State(n)) for _ in range(200))
                for n in (1, 4, 12)]
    assert ceilings[0] <= 0.1 < ceilings[1] <= 0.8 < ceilings[2] <= 2.0


def test_unavailable_past_the_budget_reraises_then_fails_fast(budget):
    error = mysql_error(2013, 'Lost connection', db_exc.DBConnectionError)
    fn, calls = losing(1000, lambda _message: error)
    began = time.monotonic()
    with pytest.raises(db_exc.DBConnectionError):
        retry.write(fn, 'v')
    assert budget <= time.monotonic() - began < budget + 2.5
    assert len(calls) > 1
    # Still down: the next transaction is tried once, not for a budget.
    fn, calls = losing(1000, lambda _message: error)
    with pytest.raises(db_exc.DBConnectionError):
        retry.write(fn, 'v')
    assert len(calls) == 1
    # A commit ends the outage: waiting out failovers again.
    assert retry.write(lambda: 'ok') == 'ok'
    fn, calls = losing(2, lambda _message: error)
    assert retry.write(fn, 'v') == 'v'
    assert len(calls) == 3


def test_other_database_errors_are_not_retried(budget):
    fn, calls = losing(5, lambda _message: mysql_error(1146, 'no table'))
    with pytest.raises(db_exc.DBError):
        retry.write(fn, 'v')
    assert len(calls) == 1


@pytest.mark.parametrize('error, cause', [
    (db_exc.DBDeadlock(), 'race'), (db_api.ConcurrentUpdate(), 'race'),
    (db_exc.DBDuplicateEntry(), 'race'),
    (db_api.ConnectionLost(), 'unavailable'),
    (mysql_error(1180, 'during COMMIT'), 'unavailable'),
    (mysql_error(1062, 'duplicate'), None), (ValueError(), None)])
def test_causes(error, cause):
    assert retry.cause(error) == cause


def test_driver_errors_met_while_connecting_are_unavailable():
    """SQLAlchemy sets a new connection's isolation level outside
    oslo.db's filters: the driver's (or SQLAlchemy's) error arrives."""
    import pymysql
    import sqlalchemy as sa
    raw = pymysql.err.OperationalError(
        1047, 'WSREP has not yet prepared node for application use')
    assert retry.cause(raw) == 'unavailable'
    assert retry.cause(sa.exc.OperationalError('SET', {}, raw)) == \
        'unavailable'
    assert retry.cause(pymysql.err.OperationalError(1146, 'no table')) \
        is None


def test_a_read_is_run_again_only_when_the_database_was_unavailable(
        budget, monkeypatch):
    monkeypatch.setattr(retry, 'UNAVAILABLE_WAIT',
                        retry.tenacity.wait_fixed(0.01))
    error = mysql_error(2013, 'Lost connection', db_exc.DBConnectionError)
    fn, calls = losing(4, lambda _message: error)
    assert retry.read(fn, 'v') == 'v'
    assert len(calls) == 5
    fn, calls = losing(1, db_exc.DBDeadlock)
    with pytest.raises(db_exc.DBDeadlock):
        retry.read(fn, 'v')
    assert len(calls) == 1
