"""Notifications through oslo.messaging's notifier.

Nothing is sent unless ``[oslo_messaging_notifications] driver`` names a
driver (the default sends nothing). Event types and payloads:

``allocworker.allocation.changed`` (one per committed consumer change)::

    {"consumer_uuid", "consumer_generation" (null when deleted),
     "project_id", "user_id", "consumer_type", "partition" (the one its
     providers lie in, ``shared`` aside: RPC 1.6; null when it held and
     holds nothing),
     "allocations": {provider_uuid: {resource_class: amount}}}

``allocworker.event.received`` (one per newly stored event)::

    {"name", "consumer_uuid", "tag", "event_status", "received_at",
     "held": bool}

``allocworker.group.changed`` (one per committed change of a group's
rules or members, or its creation or deletion; a member's allocations
moving are ``allocation.changed``)::

    {"uuid", "generation" (null when deleted), "change": "created" |
     "rules" | "members" | "deleted", "rules": [rule], "members": n}

``allocworker.topology.changed`` (a level's domains set, or the level
deleted)::

    {"name", "generation" (null when deleted), "domains": {aggregate
     uuid: label}}
"""

import socket
import threading

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from allocworker.conf import CONF
from allocworker import rpc

LOG = logging.getLogger(__name__)

ALLOCATION_CHANGED = 'allocworker.allocation.changed'
EVENT_RECEIVED = 'allocworker.event.received'
GROUP_CHANGED = 'allocworker.group.changed'
TOPOLOGY_CHANGED = 'allocworker.topology.changed'

_lock = threading.Lock()
_notifier = None


def _get_notifier():
    global _notifier
    with _lock:
        if _notifier is None:
            transport = messaging.get_notification_transport(CONF)
            _notifier = messaging.Notifier(
                transport, publisher_id='allocworker.%s'
                % socket.gethostname(),
                serializer=rpc.ContextSerializer())
        return _notifier


def reset():
    """Forget this process's notifier (after fork, or in tests)."""
    global _notifier
    _notifier = None


def enabled():
    """Whether notifications are sent at all (a caller may skip reading
    what it would only send)."""
    try:
        return bool(CONF.oslo_messaging_notifications.driver)
    except cfg.NoSuchOptError:
        # Registered by oslo.messaging when a notifier is first made.
        try:
            _get_notifier()
        except Exception:
            LOG.exception('could not set notifications up')
            return False
        return bool(CONF.oslo_messaging_notifications.driver)


def emit(context, event_type, payloads):
    """Send one notification per payload; never fails the caller."""
    if not payloads:
        return
    try:
        notifier = _get_notifier()
        # is_enabled() is true with no driver at all (only 'noop' counts
        # as off), and building a notification for nobody costs more
        # than the rest of a small allocate's bookkeeping.
        if not notifier.is_enabled() or \
                not CONF.oslo_messaging_notifications.driver:
            return
        # A RequestContext, not its dict: oslo.messaging drops a plain
        # dict's fields (since 14.x) and sends the context redacted.
        context = rpc.make_context(context) if context is not None else {}
        for payload in payloads:
            notifier.info(context, event_type, payload)
    except Exception:
        LOG.exception('could not send %s notifications', event_type)
