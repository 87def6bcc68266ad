"""Queries on remembered allocate answers."""

import collections
import datetime

from oslo_serialization import jsonutils
from oslo_utils import timeutils
import sqlalchemy as sa

from allocworker.db import api
from allocworker.db import schema

_k = schema.idempotency_keys

Remembered = collections.namedtuple('Remembered',
                                    ['request_hash', 'answer'])


def _window_start(max_age):
    return timeutils.utcnow() - datetime.timedelta(seconds=max_age)


def lookup(conn, keys, max_age):
    """{key: Remembered} of keys remembered in the last ``max_age`` s."""
    if not keys:
        return {}
    fresh_since = _window_start(max_age)
    rows = conn.execute(sa.select(_k.c.key, _k.c.request_hash, _k.c.answer)
                        .where(_k.c.key.in_(sorted(set(keys))),
                               _k.c.created_at >= fresh_since))
    return {key: Remembered(digest, jsonutils.loads(answer))
            for key, digest, answer in rows}


def forget_stale(conn, keys, max_age):
    """Drop rows of ``keys`` older than ``max_age`` s so they can be used
    again."""
    if keys:
        fresh_since = _window_start(max_age)
        conn.execute(sa.delete(_k).where(_k.c.key.in_(sorted(set(keys))),
                                         _k.c.created_at < fresh_since))


def _rows(entries):
    now = timeutils.utcnow()
    return [{'key': key, 'request_hash': digest,
             'answer': jsonutils.dumps(answer), 'created_at': now}
            for key, digest, answer in sorted(entries, key=lambda e: e[0])]


def remember(conn, entries):
    """entries: [(key, request_hash, answer dict)]."""
    if entries:
        conn.execute(sa.insert(_k), _rows(entries))


def remember_unless_known(conn, entries):
    """``remember``, but a key already stored keeps its row: a writer
    that stored it first (committed, or committing, which this waits
    for) keeps its answer."""
    if entries:
        conn.execute(api.insert_keeping_existing(conn.dialect.name, _k,
                                                 'key'), _rows(entries))


def amend(conn, key, answer):
    """Replace the answer remembered under ``key`` (written by this
    transaction) with a fuller one."""
    conn.execute(sa.update(_k).where(_k.c.key == key)
                 .values(answer=jsonutils.dumps(answer)))


def expire(conn, max_age):
    return conn.execute(sa.delete(_k).where(
        _k.c.created_at < _window_start(max_age))).rowcount
