"""retry.write: tenacity's policy, built once and shared by threads;
exhaustion is 409."""

import threading

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
