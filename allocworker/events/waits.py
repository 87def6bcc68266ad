"""Waiting for external events: what a wait wants, what counts as
arrived, and its answer (design §3 ``wait_for_events``).

A wait counts every event stored for its consumer before or after it
started (a held event while it is held, as ``db.events.of_consumer``
says), the newest match of each wanted name winning. Two ways to wait
share these rules: ``wait_for_events`` blocks its thread, polling its own
consumer (the HTTP mirror's way); ``watch.start_wait`` only starts one,
which the RPC server parks without a thread and the process's watcher
settles together with every other parked wait.
"""

import time

from oslo_utils import timeutils

from allocworker import codes
from allocworker.conf import CONF
from allocworker.conf import messaging as messaging_conf
from allocworker.db import api as db
from allocworker.db import events as db_events
from allocworker.events import external
from allocworker import items
from allocworker import policy
from allocworker import validation

# Consumers per statement when many waits are checked at once.
CHECK_CHUNK = 500

# Registered by its reader, not by allocworker.conf (see conf.messaging).
messaging_conf.register_opts(CONF)


def max_wait():
    """Waits end before the caller's RPC call would time out."""
    return max(1, min(CONF.events.max_wait_seconds,
                      CONF.rpc_response_timeout - 5))


def parse_wanted(raw, index):
    """'name' or 'name:tag' -> (name, tag or None)."""
    where = 'names[%d]' % index
    validation.string(raw, where, max_length=511)
    name, _, tag = raw.partition(':')
    if name not in CONF.events.allowed_names:
        raise validation.invalid('%s: %r is not one of [events] '
                                 'allowed_names' % (where, name))
    return name, (tag or None)


class Wait(object):
    """One wait_for_events call: the names asked for (as sent), what each
    means (``(name, tag)`` or the item's Fault), the events found so far,
    and its deadline on ``time.monotonic()``'s clock."""

    __slots__ = ('consumer_uuid', 'names', 'wanted', 'found', 'deadline',
                 'mark', 'watcher')

    def __init__(self, consumer_uuid, names, wanted, deadline):
        self.consumer_uuid = consumer_uuid
        self.names = names
        self.wanted = wanted
        self.found = {}
        self.deadline = deadline
        self.mark = None  # the watcher's tick when it began, if watched
        self.watcher = None

    def pending(self):
        return [w for w in self.wanted if not isinstance(w, codes.Fault)
                and w not in self.found]

    def answerable(self, now=None):
        """Every wanted event arrived, or the deadline passed."""
        now = time.monotonic() if now is None else now
        return not self.pending() or now >= self.deadline

    def items(self):
        """The answer's items: one per requested name, in order."""
        return [_wait_item(raw, want, self.found)
                for raw, want in zip(self.names, self.wanted)]


def begin(context, consumer_uuid, names, timeout):
    """A Wait for a valid call, its items Faults where refused."""
    consumer_uuid = validation.uuid(consumer_uuid, 'consumer_uuid')
    validation.batch(names, 'names', CONF.worker.max_batch_items)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or timeout < 0:
        raise validation.invalid('timeout must be a number of seconds >= 0')
    wanted = items.each(names, parse_wanted, 'names')
    project = external.projects([consumer_uuid]).get(consumer_uuid)
    if not policy.allowed(context, 'wait_for_events', project):
        fault = policy.denied(context, 'wait_for_events',
                              'consumer %s' % consumer_uuid)
        wanted = [fault] * len(names)
    return Wait(consumer_uuid, names, wanted,
                time.monotonic() + min(timeout, max_wait()))


def wait_for_events(context, consumer_uuid, names, timeout):
    """Blocks this thread until the wait is answerable; its items."""
    wait = begin(context, consumer_uuid, names, timeout)
    while True:
        check([wait])
        remaining = wait.deadline - time.monotonic()
        if not wait.pending() or remaining <= 0:
            return wait.items()
        time.sleep(min(CONF.events.poll_seconds, remaining))


def check(waits):
    """Record in each wait the events that have arrived for it: one
    statement per ``CHECK_CHUNK`` consumers (each its own snapshot: a
    wait's events are read in one)."""
    waits = [w for w in waits if w.pending()]
    consumers = sorted({w.consumer_uuid for w in waits})
    arrived = {}
    now = timeutils.utcnow()
    for start in range(0, len(consumers), CHECK_CHUNK):
        arrived.update(db.one_statement(
            db_events.of_consumers, consumers[start:start + CHECK_CHUNK],
            now))
    for wait in waits:
        _match(arrived.get(wait.consumer_uuid, ()), wait)


def _match(arrived, wait):
    for event in arrived:  # oldest first: the newest match wins
        for want in wait.wanted:
            if isinstance(want, codes.Fault):
                continue
            name, tag = want
            if event.name == name and (tag is None or event.tag == tag):
                wait.found[want] = event


def _wait_item(raw, want, found):
    if isinstance(want, codes.Fault):
        return want.item(name=items.echo(raw))
    event = found.get(want)
    if event is None:
        return codes.Fault(codes.EVENT_TIMEOUT,
                           'no %s event arrived in time' % raw
                           ).item(name=raw)
    return {'name': raw, 'status': 200, 'event': {
        'name': event.name, 'consumer_uuid': event.consumer_uuid,
        'tag': event.tag or None, 'event_status': event.status,
        'received_at': external.timestamp(event.received_at)}}
