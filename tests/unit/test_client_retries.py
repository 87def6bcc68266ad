"""The two retries outside write transactions, on tenacity (issue 39): a
keyed RPC batch sent again after a timeout, and the Placement shim's
writes before 1.28 read and written again after a generation race."""

import oslo_messaging as messaging
import pytest

from allocworker.api.placement import allocations as shim
from allocworker.api.placement import http
from allocworker import codes
from allocworker import rpcapi

RACED = {'status': 409, 'code': codes.CONSUMER_GENERATION_CONFLICT.code,
         'consumer_uuid': 'c', 'consumer_generation': 2}


def client(failures):
    """An AllocWorkerAPI whose calls time out ``failures`` times first."""
    api = object.__new__(rpcapi.AllocWorkerAPI)
    sent = []

    def call(context, method, **kwargs):
        sent.append(method)
        if len(sent) <= failures:
            raise messaging.MessagingTimeout('no answer')
        return {'status': 200}
    api._call = call
    return api, sent


@pytest.mark.parametrize('failures', [0, 1, 2])
def test_a_keyed_batch_is_sent_again_until_answered(failures):
    api, sent = client(failures)
    items = [{'idempotency_key': 'k'}]
    assert api.allocate({}, items, retries=2) == {'status': 200}
    assert sent == ['allocate'] * (failures + 1)


def test_a_keyed_batch_gives_up_after_its_retries():
    api, sent = client(3)
    with pytest.raises(messaging.MessagingTimeout):
        api.allocate({}, [{'idempotency_key': 'k'}], retries=2)
    assert len(sent) == 3


def test_an_unkeyed_batch_is_sent_once():
    api, sent = client(1)
    with pytest.raises(messaging.MessagingTimeout):
        api.allocate({}, [{'idempotency_key': 'k'}, {}], retries=2)
    assert sent == ['allocate']


class Request(object):
    context = None

    def __init__(self, microversion):
        self.microversion = microversion

    def at_least(self, minor):
        return self.microversion >= minor


@pytest.fixture
def writes(monkeypatch):
    """The answers each write gives, in turn; the calls made."""
    made = {'reads': 0, 'writes': 0}
    answers = []

    def read(request, uuids):
        made['reads'] += 1
        return {uuid: {'status': 200, 'consumer_generation': 1,
                       'project_id': 'p', 'user_id': 'u'} for uuid in uuids}

    def write(context, items, **kwargs):
        made['writes'] += 1
        return [answers.pop(0) if answers else {'status': 200}]
    monkeypatch.setattr(shim, '_read', read)
    monkeypatch.setattr(shim.allocations, 'write', write)
    return made, answers


def test_a_write_before_1_28_reads_again_after_a_race(writes):
    made, answers = writes
    answers.extend([RACED, RACED])
    shim._write(Request(27), {'c': {'allocations': {}}}, '')
    assert made == {'reads': 3, 'writes': 3}


def test_a_write_before_1_28_answers_the_last_race(writes):
    made, answers = writes
    answers.extend([RACED] * shim.READ_WRITE_ATTEMPTS)
    with pytest.raises(http.HTTPError) as refused:
        shim._write(Request(27), {'c': {'allocations': {}}}, '')
    assert refused.value.status == 409
    assert made['writes'] == shim.READ_WRITE_ATTEMPTS


def test_a_write_from_1_28_is_tried_once(writes):
    made, answers = writes
    answers.append(RACED)
    with pytest.raises(http.HTTPError):
        shim._write(Request(28), {'c': {'allocations': {},
                                        'consumer_generation': 2}}, '')
    assert made == {'reads': 0, 'writes': 1}


def test_a_delete_reads_again_after_a_race(writes):
    made, answers = writes
    answers.append(RACED)
    shim.delete(Request(27), '7cd5ae5a-5b8c-4a83-8d2b-57e1c44bd4a4')
    assert made == {'reads': 2, 'writes': 2}
