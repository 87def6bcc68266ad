"""Queries on stored events."""

import collections

import sqlalchemy as sa

from allocworker.db import schema

_e = schema.events
_c = schema.consumers

Event = collections.namedtuple(
    'Event', ['consumer_uuid', 'name', 'tag', 'status', 'received_at',
              'held_until'])

_COLUMNS = [_e.c.consumer_uuid, _e.c.name, _e.c.tag, _e.c.status,
            _e.c.received_at, _e.c.held_until]


def existing_consumers(conn, uuids):
    return set(projects_of(conn, uuids))


def projects_of(conn, uuids):
    """{consumer_uuid: project_id} of the consumers that exist."""
    if not uuids:
        return {}
    rows = conn.execute(sa.select(_c.c.uuid, _c.c.project_id)
                        .where(_c.c.uuid.in_(sorted(set(uuids)))))
    return dict(rows.all())


def find(conn, keys):
    """Stored events among ``keys`` [(consumer_uuid, name, tag, status)]."""
    if not keys:
        return set()
    uuids = sorted({k[0] for k in keys})
    rows = conn.execute(sa.select(_e.c.consumer_uuid, _e.c.name, _e.c.tag,
                                  _e.c.status)
                        .where(_e.c.consumer_uuid.in_(uuids)))
    return {tuple(row) for row in rows} & set(keys)


def insert(conn, events):
    """events: [Event]."""
    if events:
        conn.execute(sa.insert(_e), [e._asdict() for e in events])


def of_consumer(conn, consumer_uuid, now):
    """The consumer's events that count as arrived at ``now``, oldest
    first: every event not held, and held ones still in their window."""
    return of_consumers(conn, [consumer_uuid], now).get(consumer_uuid, [])


def of_consumers(conn, consumer_uuids, now):
    """{consumer_uuid: [Event]} as ``of_consumer`` for each of them (those
    with no event left out), in one statement."""
    if not consumer_uuids:
        return {}
    found = collections.defaultdict(list)
    for row in conn.execute(_OF_CONSUMERS, {
            'uuids': sorted(set(consumer_uuids)), 'now': now}):
        found[row.consumer_uuid].append(Event(*row))
    return found


_OF_CONSUMERS = (sa.select(*_COLUMNS)
                 .where(_e.c.consumer_uuid.in_(
                     sa.bindparam('uuids', expanding=True)),
                     sa.or_(_e.c.held_until.is_(None),
                            _e.c.held_until > sa.bindparam('now')))
                 .order_by(_e.c.received_at, _e.c.id))


def newest_id(conn):
    """The highest event id stored (0 for none)."""
    return conn.execute(sa.select(sa.func.max(_e.c.id))).scalar() or 0


def stored_after(conn, after_id, limit):
    """[(id, consumer_uuid)] of the events whose id is above ``after_id``,
    lowest first, at most ``limit`` of them."""
    return [tuple(row) for row in conn.execute(
        _STORED_AFTER, {'after': after_id, 'limit': limit})]


_STORED_AFTER = (sa.select(_e.c.id, _e.c.consumer_uuid)
                 .where(_e.c.id > sa.bindparam('after'))
                 .order_by(_e.c.id).limit(sa.bindparam('limit')))


def listing(conn, consumer_uuid=None, limit=1000):
    query = sa.select(*_COLUMNS).order_by(_e.c.received_at.desc(),
                                          _e.c.id.desc()).limit(limit)
    if consumer_uuid is not None:
        query = query.where(_e.c.consumer_uuid == consumer_uuid)
    return [Event(*row) for row in conn.execute(query)]


def release_held(conn, consumer_uuids, now):
    """Consumers appeared: their events still in the hold window count
    from now on, whatever happens to the window."""
    if consumer_uuids:
        conn.execute(_RELEASE_HELD, {'uuids': sorted(consumer_uuids),
                                     'now': now})


_RELEASE_HELD = (sa.update(_e)
                 .where(_e.c.consumer_uuid.in_(
                     sa.bindparam('uuids', expanding=True)),
                     _e.c.held_until >= sa.bindparam('now'))
                 .values(held_until=None))


def expire(conn, now, retained_since):
    """Delete held events past their window and events past retention."""
    held = conn.execute(sa.delete(_e).where(_e.c.held_until < now))
    old = conn.execute(sa.delete(_e).where(_e.c.received_at < retained_since))
    return held.rowcount + old.rowcount
