"""Project limits from a real Keystone while it changes and fails: a limit
changed in Keystone holds within ``[quota] refresh_seconds``; while
Keystone is down the last limits hold for ``[quota] stale_seconds``, then
writes that grow usage answer 500 (and write nothing) while shrinking
ones go on, until Keystone answers again."""

import threading
import time
import uuid

import pytest

from tests.functional.helpers import alloc_item, assert_fault, one, provider

BACKENDS = ('postgresql',)
REFRESH_SECONDS = 2
STALE_SECONDS = 10
# Keystone on a busy machine: a read of the limits takes a few seconds.
SLACK_SECONDS = 15


@pytest.fixture(scope='module')
def worker_count():
    return 2


@pytest.fixture(scope='module')
def host(limited_rpc):
    return provider(limited_rpc, {'VCPU': {'total': 10000}})[0]


def boot(rpc, project, host, consumer=None, vcpu=1, generation=None):
    return one(rpc.allocate(items=[alloc_item(
        consumer or str(uuid.uuid4()), {host: {'VCPU': vcpu}} if vcpu else {},
        generation, project=project)]))


def until(check, seconds, pause=0.25):
    """``check()``'s first true answer within ``seconds``, else None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(pause)
    return None


def agreed(rpc, project, resource, limit):
    """Wait until 8 answers in a row (from any worker process) show
    ``limit``: every process has read it by then."""
    row = []

    def seen():
        found = {i['resource']: i['limit'] for i in
                 rpc.get_limits(project_id=project)['items']}
        row.append(found.get(resource) == limit)
        return len(row) >= 8 and all(row[-8:])

    assert until(seen, REFRESH_SECONDS + SLACK_SECONDS, 0.1), (
        'the worker processes did not all read %s = %d' % (resource, limit))


def test_a_limit_changed_in_keystone_holds_within_refresh_seconds(
        limited_rpc, keystone, host):
    rpc = limited_rpc
    project = keystone.project('change-%s' % uuid.uuid4().hex[:8])
    keystone.project_limit(project, 'class:VCPU', 2)
    agreed(rpc, project, 'class:VCPU', 2)
    first = [boot(rpc, project, host) for _ in range(2)]
    assert [b['status'] for b in first] == [200, 200]
    assert_fault(boot(rpc, project, host), 403, 'quota.exceeded')
    keystone.project_limit(project, 'class:VCPU', 3)
    raised = until(lambda: boot(rpc, project, host)['status'] == 200,
                   REFRESH_SECONDS + SLACK_SECONDS)
    assert raised, 'the raised limit never took effect'
    # Lowered below usage: growth is refused, shrinking is not.
    keystone.project_limit(project, 'class:VCPU', 1)
    agreed(rpc, project, 'class:VCPU', 1)
    assert_fault(boot(rpc, project, host), 403, 'quota.exceeded')
    gen = first[0]['consumer_generation']
    shrunk = boot(rpc, project, host, first[0]['consumer_uuid'], 0, gen)
    assert shrunk['status'] == 200, shrunk


def test_keystone_stopped_and_started_under_load(limited_rpc, keystone,
                                                 host):
    rpc = limited_rpc
    project = keystone.project('outage-%s' % uuid.uuid4().hex[:8])
    keystone.project_limit(project, 'servers', 5)
    agreed(rpc, project, 'servers', 5)
    answers, stop = [], threading.Event()

    def load():
        """Boot one consumer and delete it again, over and over."""
        while not stop.is_set():
            booted = boot(rpc, project, host)
            answers.append(('boot', time.monotonic(), booted))
            if booted['status'] == 200:
                gone = boot(rpc, project, host, booted['consumer_uuid'], 0,
                            booted['consumer_generation'])
                answers.append(('delete', time.monotonic(), gone))

    threads = [threading.Thread(target=load) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        time.sleep(1)
        keystone.stop()
        stopped = time.monotonic()
        time.sleep(REFRESH_SECONDS)
        refused = until(lambda: [a for a in answers if a[2]['status'] ==
                                 500], REFRESH_SECONDS + STALE_SECONDS +
                        SLACK_SECONDS)
        assert refused, 'growth went on without limits for too long'
        keystone.start()
        mark = len(answers)
        assert until(lambda: [a for a in answers[mark:] if a[0] == 'boot'
                              and a[2]['status'] == 200],
                     REFRESH_SECONDS + SLACK_SECONDS), \
            'growth did not resume once Keystone answered'
    finally:
        stop.set()
        for t in threads:
            t.join()
    held_during_outage = [a for a in answers if a[0] == 'boot' and
                          a[2]['status'] == 200 and
                          stopped < a[1] < stopped + STALE_SECONDS - 1]
    assert held_during_outage, 'the last limits did not keep holding'
    for kind, _when, answer in answers:
        if kind == 'delete':
            assert answer['status'] == 200, answer
        elif answer['status'] == 500:
            assert_fault(answer, 500, 'internal_error')
            assert 'cannot be judged' in answer['detail'], answer
        else:
            assert answer['status'] == 200, answer
    # Every worker process reads its limits again (until then its
    # get_limits answers a whole-request 500, as its writes would).
    agreed(rpc, project, 'servers', 5)
    limits = {i['resource']: i for i in
              rpc.get_limits(project_id=project)['items']}
    assert limits['servers']['usage'] == 0
