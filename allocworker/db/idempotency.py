"""Queries on remembered allocate answers."""

import collections

from oslo_serialization import jsonutils
from oslo_utils import timeutils
import sqlalchemy as sa

from allocworker.db import schema

_k = schema.idempotency_keys

Remembered = collections.namedtuple('Remembered',
                                    ['request_hash', 'answer'])


def lookup(conn, keys, fresh_since):
    """{key: Remembered} of keys remembered since ``fresh_since``."""
    if not keys:
        return {}
    rows = conn.execute(sa.select(_k.c.key, _k.c.request_hash, _k.c.answer)
                        .where(_k.c.key.in_(sorted(set(keys))),
                               _k.c.created_at >= fresh_since))
    return {key: Remembered(digest, jsonutils.loads(answer))
            for key, digest, answer in rows}


def forget_stale(conn, keys, fresh_since):
    """Drop expired rows of ``keys`` so they can be used again."""
    if keys:
        conn.execute(sa.delete(_k).where(_k.c.key.in_(sorted(set(keys))),
                                         _k.c.created_at < fresh_since))


def remember(conn, entries):
    """entries: [(key, request_hash, answer dict)]."""
    if entries:
        now = timeutils.utcnow()
        conn.execute(sa.insert(_k), [
            {'key': key, 'request_hash': digest,
             'answer': jsonutils.dumps(answer), 'created_at': now}
            for key, digest, answer in entries])


def expire(conn, fresh_since):
    return conn.execute(sa.delete(_k).where(
        _k.c.created_at < fresh_since)).rowcount
