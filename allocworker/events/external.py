"""Rules for external events: recording, holding, expiring (waiting for
them is ``events.waits``).

Events are stored, so their order against consumers and waiters never
matters: an event for a consumer that does not exist yet is held for
``[events] hold_seconds`` and counts as arrived if the consumer appears in
that window; a waiter counts every event stored before it started.
"""

import datetime

from oslo_utils import timeutils

from allocworker import codes
from allocworker import items
from allocworker import metrics
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db import events as db_events
from allocworker import notifications
from allocworker import policy
from allocworker import retry
from allocworker import validation

STATUSES = ('completed', 'failed', 'in-progress')
EVENT_FIELDS = ('name', 'consumer_uuid', 'status', 'tag')
POWER_TAGS = ('POWER_ON', 'POWER_OFF')
# Names whose tag says what the event is about; without it the event is
# meaningless.
TAG_REQUIRED = {
    'volume-extended': 'the volume id',
    'power-update': 'POWER_ON or POWER_OFF',
    'accelerator-request-bound': 'the accelerator request id',
}


# -- external_event ------------------------------------------------------

def parse_event(raw, index):
    """(consumer_uuid, name, tag, status) with tag '' for none."""
    where = 'events[%d]' % index
    validation.mapping(raw, where)
    validation.only_keys(raw, where, EVENT_FIELDS)
    name = validation.required(raw, where, 'name')
    if name not in CONF.events.allowed_names:
        raise validation.invalid('%s.name %r is not one of [events] '
                                 'allowed_names' % (where, name))
    uuid = validation.uuid(validation.required(raw, where, 'consumer_uuid'),
                           where + '.consumer_uuid')
    status = raw.get('status', 'completed')
    if status not in STATUSES:
        raise validation.invalid('%s.status must be one of %s, not %r'
                                 % (where, ', '.join(STATUSES), status))
    tag = raw.get('tag')
    if tag is not None:
        validation.string(tag, where + '.tag')
    elif name in TAG_REQUIRED:
        raise validation.invalid('%s.tag is required for %s (%s)'
                                 % (where, name, TAG_REQUIRED[name]))
    if name == 'power-update' and tag not in POWER_TAGS:
        raise validation.invalid('%s.tag of power-update must be POWER_ON '
                                 'or POWER_OFF, not %r' % (where, tag))
    return uuid, name, tag or '', status


def external_event(context, events):
    validation.batch(events, 'events', CONF.worker.max_batch_items)
    parsed = items.each(events, parse_event, 'events')
    keys = items.valid(parsed)
    if keys:
        owners = projects(key[0] for key in keys)
        parsed = [p if isinstance(p, codes.Fault) or policy.allowed(
                  context, 'external_event', owners.get(p[0]))
                  else policy.denied(context, 'external_event',
                                     'consumer %s' % p[0])
                  for p in parsed]
        keys = items.valid(parsed)
    existing, stored = retry.write(_record, keys) if keys else (set(), [])
    metrics.events_recorded(stored)
    notifications.emit(context, notifications.EVENT_RECEIVED,
                       [_event_payload(e) for e in stored])
    return [_event_item(raw, key, existing) for raw, key in
            zip(events, parsed)]


def projects(consumer_uuids):
    """{consumer_uuid: project_id} of those that exist (policy targets)."""
    return db.one_statement(db_events.projects_of, set(consumer_uuids))


def _record(keys):
    """Store the events not stored yet; (existing consumers, new Events)."""
    with db.writer() as conn:
        now = timeutils.utcnow()
        existing = db_events.existing_consumers(conn, [k[0] for k in keys])
        known = db_events.find(conn, keys)
        held_until = now + datetime.timedelta(
            seconds=CONF.events.hold_seconds)
        fresh = []
        for key in dict.fromkeys(keys):  # a key twice in one call is one
            if key not in known:
                fresh.append(db_events.Event(
                    *key, received_at=now,
                    held_until=None if key[0] in existing else held_until))
        db_events.insert(conn, fresh)
        return existing, fresh


def _event_item(raw, key, existing):
    if isinstance(key, codes.Fault):
        item = key.item(**items.echo_fields(raw, 'name', 'consumer_uuid',
                                            'tag'))
        status = (raw if isinstance(raw, dict) else {}).get('status',
                                                            'completed')
        item['event_status'] = status if isinstance(status, str) else None
        return item
    uuid, name, tag, status = key
    item = {'name': name, 'consumer_uuid': uuid, 'tag': tag or None,
            'event_status': status}
    if uuid in existing:
        item['status'] = 200
        return item
    return codes.Fault(
        codes.EVENT_HELD, 'consumer %s does not exist (yet); the event is '
        'held for %d seconds and counts if the consumer appears'
        % (uuid, CONF.events.hold_seconds)).item(**item)


def _event_payload(event):
    return {'name': event.name, 'consumer_uuid': event.consumer_uuid,
            'tag': event.tag or None, 'event_status': event.status,
            'received_at': timestamp(event.received_at),
            'held': event.held_until is not None}


def timestamp(moment):
    return moment.replace(tzinfo=datetime.timezone.utc).isoformat()


# -- upkeep --------------------------------------------------------------

def expire():
    """Remove held events past their window and all past retention."""
    now = timeutils.utcnow()
    retained_since = now - datetime.timedelta(
        seconds=CONF.events.retention_seconds)
    with db.writer() as conn:
        return db_events.expire(conn, now, retained_since)


def list_events(consumer_uuid=None, limit=1000):
    """Stored events, newest first (for operators)."""
    if consumer_uuid is not None:
        consumer_uuid = validation.uuid(consumer_uuid, 'consumer')
    with db.reader() as conn:
        rows = db_events.listing(conn, consumer_uuid, limit)
    return [dict(_event_payload(e), held_until=e.held_until and
                 timestamp(e.held_until)) for e in rows]
