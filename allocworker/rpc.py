"""Transport, context serialization and server set-up for oslo.messaging.

Contexts travel as the dicts ``oslo_context.RequestContext.to_dict()``
makes; a worker rebuilds a RequestContext from whatever dict arrives
(unknown keys ignored, missing ones defaulted, a request id made up when
the caller sent none).

The exchange is oslo.messaging's default (``[DEFAULT] control_exchange``,
"openstack"): the design names only the topic, so a client that knows only
the design must reach the worker without setting an exchange.
"""

import threading

from oslo_context import context as oslo_context
import oslo_messaging as messaging

from allocworker.conf import CONF
from allocworker.metrics import tracing
from allocworker import rpc_server

_transport = None


def get_transport(conf=CONF):
    """This process's RPC transport (one per process, made after fork)."""
    global _transport
    if _transport is None:
        _transport = messaging.get_rpc_transport(conf)
    return _transport


def cleanup():
    global _transport
    if _transport is not None:
        _transport.cleanup()
        _transport = None


def make_context(values):
    if isinstance(values, oslo_context.RequestContext):
        return values
    if not isinstance(values, dict):
        values = {}
    # oslo.context reads the user from "user" only, which it writes
    # beside "user_id"; a client written from the design sends
    # "user_id", which [partitions] bindings are keyed by.
    return oslo_context.RequestContext.from_dict(
        values, user_id=values.get('user_id') or values.get('user'))


class ContextSerializer(messaging.NoOpSerializer):
    """Contexts as plain dicts on the wire, RequestContexts in code."""

    def serialize_context(self, context):
        if isinstance(context, oslo_context.RequestContext):
            return tracing.carry(context.to_dict())
        return tracing.carry(dict(context or {}))

    def deserialize_context(self, context):
        return make_context(tracing.resume(context))


def get_server(endpoints, topic, server_name):
    target = messaging.Target(topic=topic, server=server_name)
    return messaging.get_rpc_server(
        get_transport(), target, endpoints,
        serializer=ContextSerializer(),
        access_policy=messaging.DefaultRPCAccessPolicy,
        server_cls=rpc_server.Server)


def within(seconds, send, *args, **kwargs):
    """``send(*args, **kwargs)``'s answer, or MessagingTimeout once
    ``seconds`` have passed, whatever ``send`` is still blocked on.

    oslo.messaging does not bound every wait of a call on a hung broker
    node (kombu's connect timeout, a connection lock its heartbeat thread
    holds while reconnecting, the reply queue's declaration), so the call
    runs in a daemon thread of its own and the caller waits for it at
    most ``seconds``. An abandoned call ends within a bounded time too
    (``[worker] publish_retries``), so such threads do not pile up.
    """
    outcome = []
    done = threading.Event()

    def run():
        try:
            outcome.append((True, send(*args, **kwargs)))
        except BaseException as error:
            outcome.append((False, error))
        finally:
            done.set()

    threading.Thread(target=run, name='allocworker-rpc-call',
                     daemon=True).start()
    if not done.wait(seconds):
        raise messaging.MessagingTimeout(
            'No answer within %.1f s (the broker did not take or answer '
            'the call in time)' % seconds)
    answered, value = outcome[0]
    if not answered:
        raise value
    return value


def get_client(topic, version, version_cap=None, timeout=None,
               transport=None):
    """A client whose publishes give up (MessageDeliveryFailure) after
    ``[worker] publish_retries`` reconnections instead of retrying for
    ever, so that no call outlives its timeout by more than about one
    publish (see doc/deployment.md, "A hung broker node")."""
    target = messaging.Target(topic=topic, version=version)
    return messaging.get_rpc_client(
        transport or get_transport(), target, version_cap=version_cap,
        serializer=ContextSerializer(), timeout=timeout,
        retry=CONF.worker.publish_retries)
