"""Queries on resource classes."""

from oslo_utils import timeutils
import sqlalchemy as sa

from allocworker.db import schema

_rc = schema.resource_classes


def ids_by_name(conn, names):
    """{name: id} for those of ``names`` that exist."""
    if not names:
        return {}
    rows = conn.execute(sa.select(_rc.c.name, _rc.c.id)
                        .where(_rc.c.name.in_(sorted(set(names)))))
    return dict(rows.all())


def names(conn):
    return [row.name for row in
            conn.execute(sa.select(_rc.c.name).order_by(_rc.c.name))]


def create(conn, name):
    """Create a class; False when it already existed."""
    if ids_by_name(conn, [name]):
        return False
    conn.execute(sa.insert(_rc).values(name=name,
                                       created_at=timeutils.utcnow()))
    return True


def ensure(conn, wanted):
    """Create those of ``wanted`` that do not exist yet."""
    existing = ids_by_name(conn, wanted)
    missing = [n for n in wanted if n not in existing]
    if missing:
        now = timeutils.utcnow()
        conn.execute(sa.insert(_rc),
                     [{'name': n, 'created_at': now} for n in missing])
    return missing
