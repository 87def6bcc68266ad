"""A call through allocworker.rpcapi never outlives its timeout plus
[worker] call_grace, whatever oslo.messaging is blocked on."""

import threading

import oslo_messaging as messaging
import pytest

from allocworker.conf import CONF
from allocworker import rpc
from allocworker import rpcapi


def test_an_answer_in_time_is_returned():
    assert rpc.within(5, lambda a, b=0: a + b, 40, b=2) == 42


def test_an_error_in_time_is_raised_as_it_is():
    def refuse():
        raise messaging.MessageDeliveryFailure('refused')
    with pytest.raises(messaging.MessageDeliveryFailure, match='refused'):
        rpc.within(5, refuse)


def test_a_blocked_send_is_abandoned_at_the_deadline():
    release = threading.Event()
    try:
        with pytest.raises(messaging.MessagingTimeout, match='0.1 s'):
            rpc.within(0.1, release.wait)
    finally:
        release.set()


@pytest.fixture
def fake_transport():
    transport = messaging.get_rpc_transport(CONF, url='fake:/')
    yield transport
    transport.cleanup()


@pytest.mark.parametrize('client_timeout, call_timeout, waits', [
    (None, None, 61), (5, None, 6), (5, 2, 3), (None, 2.5, 3.5)])
def test_the_caller_waits_the_call_timeout_plus_the_grace(
        fake_transport, client_timeout, call_timeout, waits):
    api = rpcapi.AllocWorkerAPI(transport=fake_transport,
                                timeout=client_timeout)
    CONF.set_override('rpc_response_timeout', 60)
    try:
        cctxt, deadline = api._prepare('1.0', call_timeout)
    finally:
        CONF.clear_override('rpc_response_timeout')
    assert deadline == waits
    assert cctxt.timeout == (call_timeout or client_timeout)
