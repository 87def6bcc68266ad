"""Parked waits over RabbitMQ with several worker processes: hundreds of
wait_for_events calls parked in one process (none holding a thread),
woken by events stored through the others, timed out at their deadlines,
and answered, not dropped, when their process is told to stop.

Every waiter here calls with an RPC timeout well under its wait's
timeout where it expects to be woken, so a waiter that was not woken
fails with MessagingTimeout instead of passing by its final check."""

from concurrent import futures
import os
import signal
import threading
import time
import uuid

import oslo_messaging as messaging
import psutil
import pytest

from tests.functional import services
from tests.functional.helpers import assert_fault, one

WAITERS = 300
# Few executor threads: every waiter beyond them is parked, or it would
# queue and miss its RPC timeout.
WORKER_CONFIG = '''
[DEFAULT]
executor_thread_pool_size = 4
'''


def _events(consumers, tag='port-1', name='network-vif-plugged'):
    return [{'name': name, 'consumer_uuid': c, 'tag': tag}
            for c in consumers]


def _store(rpc, server, events):
    """Store ``events`` through one worker process, 50 a call."""
    for start in range(0, len(events), 50):
        answer = rpc.call('external_event', server=server,
                          events=events[start:start + 50])
        assert {i['status'] for i in answer['items']} <= {200, 202}, answer


def _wait_all(rpc, server, waits, rpc_timeout):
    """Start ``waits`` [(consumer, names, timeout)] at once on ``server``;
    futures of (answer or exception, seconds from call to answer)."""
    pool = futures.ThreadPoolExecutor(len(waits))
    started = threading.Barrier(len(waits) + 1)

    def wait(consumer, names, timeout):
        started.wait()
        begun = time.monotonic()
        try:
            answer = rpc.call('wait_for_events', server=server,
                              rpc_timeout=rpc_timeout, consumer_uuid=consumer,
                              names=names, timeout=timeout)
        except Exception as exc:
            answer = exc
        return answer, time.monotonic() - begun

    running = [pool.submit(wait, *w) for w in waits]
    started.wait()
    pool.shutdown(wait=False)
    return running


def _thread_count(pid):
    return psutil.Process(pid).num_threads()


def test_hundreds_parked_in_one_process_woken_from_the_others(rpc, topic):
    consumers = [str(uuid.uuid4()) for _ in range(WAITERS)]
    early, woken, never = consumers[:50], consumers[50:270], consumers[270:]
    # Events stored before their waits began still count.
    _store(rpc, '%s.1' % topic, _events(early))
    # Half the woken consumers also get an event of another tag first,
    # which must not wake them.
    _store(rpc, '%s.2' % topic, _events(woken[::2], tag='port-other'))
    idle_threads = sum(_thread_count(p) for p in rpc.worker.child_pids())
    # The woken wait longer than their RPC calls: only a wake answers
    # them in time. The others time out first.
    running = _wait_all(rpc, '%s.0' % topic, [
        (c, ['network-vif-plugged:port-1', 'network-changed'],
         3 if c in never else 40) for c in consumers], rpc_timeout=25)
    # Events stored while the waits are being parked, and after.
    _store(rpc, '%s.1' % topic, _events(woken[:110]))
    _store(rpc, '%s.2' % topic,
           _events(woken + early, tag=None, name='network-changed'))
    time.sleep(1.5)
    threads = sum(_thread_count(p) for p in rpc.worker.child_pids())
    _store(rpc, '%s.2' % topic, _events(woken[110:]))
    answers = {}
    for consumer, future in zip(consumers, running):
        answers[consumer], _ = future.result(60)
    for consumer in never:
        assert [i['status'] for i in answers[consumer]['items']] == [408] * 2
    for consumer in early + woken:
        answer = answers[consumer]
        assert not isinstance(answer, Exception), (consumer, answer)
        assert answer['status'] == 200, answer
        tagged, changed = answer['items']
        assert tagged['name'] == 'network-vif-plugged:port-1'
        assert tagged['event']['consumer_uuid'] == consumer
        assert tagged['event']['tag'] == 'port-1'
        assert changed['event']['name'] == 'network-changed'
    # Hundreds of waits parked cost no thread each: what grows is the
    # executor pools (4 each), and the waker and its 8 reply threads; a
    # thread per wait, or a pool of 64, would show here.
    assert threads - idle_threads < 40, (idle_threads, threads)


def test_parked_waits_time_out_at_their_deadlines(rpc, topic):
    waits = [(str(uuid.uuid4()), ['network-vif-plugged', 'volume-extended'],
              1 + i % 3) for i in range(200)]
    running = _wait_all(rpc, '%s.0' % topic, waits, rpc_timeout=15)
    for (consumer, names, timeout), future in zip(waits, running):
        answer, took = future.result(60)
        assert not isinstance(answer, Exception), answer
        assert answer['status'] == 207
        assert [i['name'] for i in answer['items']] == names
        for item in answer['items']:
            assert_fault(item, 408, 'event.timeout')
        # Never before the deadline.
        assert took >= timeout, (timeout, took)


def test_timeout_zero_and_refused_names_are_answered_at_once(rpc, topic):
    consumer = str(uuid.uuid4())
    _store(rpc, '%s.1' % topic, _events([consumer]))
    answer = rpc.call('wait_for_events', server='%s.0' % topic,
                      consumer_uuid=consumer, timeout=0,
                      names=['network-vif-plugged', 'network-changed',
                             'no-such-name'])
    got, missing, bad = answer['items']
    assert got['status'] == 200 and got['event']['tag'] == 'port-1'
    assert_fault(missing, 408, 'event.timeout')
    assert_fault(bad, 400, 'invalid_request')
    refused = rpc.call('wait_for_events', server='%s.0' % topic,
                       consumer_uuid='not-a-uuid', timeout=30,
                       names=['network-changed'], rpc_timeout=10)
    assert refused['status'] == 400 and refused['code'] == 'invalid_request'


def test_parked_wait_keeps_a_call_monitored_caller_waiting(rpc, topic,
                                                           backend):
    """A caller with oslo.messaging's call monitor gives up after
    call_monitor_timeout without a heartbeat; a parked call sends them."""
    if backend != 'postgresql':
        pytest.skip('heartbeats do not depend on the database: run on '
                    'PostgreSQL only, to keep CI short')
    client = rpc.client.prepare(server='%s.0' % topic, timeout=30,
                                call_monitor_timeout=2)
    began = time.monotonic()
    answer = client.call(rpc.context, 'wait_for_events',
                         consumer_uuid=str(uuid.uuid4()),
                         names=['network-vif-plugged'], timeout=7)
    assert_fault(one(answer), 408, 'event.timeout')
    assert time.monotonic() - began >= 7


# -- shutdown -------------------------------------------------------------

STOPPING_CONFIG = '''
[worker]
shutdown_timeout = 9
'''


@pytest.fixture
def second_worker(backend, database, scratch, topic):
    """One more worker process on the same topic and database, under a
    host name of its own, with a short shutdown timeout."""
    if backend != 'postgresql':
        pytest.skip('the drain does not depend on the database: run on '
                    'PostgreSQL only, to keep CI short')
    folder = os.path.join(scratch, 'second')
    os.makedirs(folder, exist_ok=True)
    path = services.write_config(os.path.join(folder, 'worker.conf'),
                                 database, topic, extra=STOPPING_CONFIG)
    with open(path) as f:
        text = f.read().replace('host = %s\n' % topic,
                                'host = %s-second\n' % topic)
    with open(path, 'w') as f:
        f.write(text)
    client = services.BareClient(topic)
    worker = services.Worker(path)
    # The worker answers once its process serves the topic; its own
    # server name is then certain to exist.
    worker.start(client)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            client.call('list_resource_classes',
                        server='%s-second.0' % topic, rpc_timeout=2)
            break
        except messaging.MessagingTimeout:
            continue
    yield worker
    if worker.process.poll() is None:
        worker.stop()


def test_stopping_worker_answers_its_parked_waits(rpc, topic,
                                                  second_worker):
    """SIGTERM with waits parked: a wait whose event is stored (by another
    process) during the drain is answered 200; one that times out during
    it 408 at its deadline; one whose deadline is past the drain is
    answered as it stands before the worker exits, 0."""
    server = '%s-second.0' % topic
    woken, timing_out, too_long = (str(uuid.uuid4()) for _ in range(3))
    running = _wait_all(rpc, server, [
        (woken, ['network-vif-plugged'], 40),
        (timing_out, ['network-vif-plugged'], 4),
        (too_long, ['network-vif-plugged'], 40)], rpc_timeout=40)
    time.sleep(2)  # parked by now
    second_worker.process.send_signal(signal.SIGTERM)
    time.sleep(1)
    _store(rpc, '%s.1' % topic, _events([woken], tag=None))
    answers = [f.result(60) for f in running]
    assert second_worker.process.wait(30) == 0
    (woke, _), (timed_out, took), (cut, cut_took) = answers
    assert one(woke)['status'] == 200, woke
    assert_fault(one(timed_out), 408, 'event.timeout')
    assert took >= 4
    assert_fault(one(cut), 408, 'event.timeout')
    # Answered when the drain ended (shutdown_timeout less its margin),
    # before its own deadline; the worker exited 0, not by its watchdog.
    assert cut_took < 40
