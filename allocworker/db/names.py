"""Catalogues of names (resource classes, traits): tables of (id, name,
timestamps) that grow by creation and by ``db sync`` seeding."""

from oslo_utils import timeutils
import sqlalchemy as sa


def create(conn, table, ids_by_name, name):
    """Create ``name``; False when it already existed."""
    if ids_by_name(conn, [name]):
        return False
    conn.execute(sa.insert(table).values(name=name,
                                         created_at=timeutils.utcnow()))
    return True


def ensure(conn, table, ids_by_name, wanted):
    """Create those of ``wanted`` that do not exist yet; the new ones."""
    existing = ids_by_name(conn, wanted)
    missing = [n for n in wanted if n not in existing]
    if missing:
        now = timeutils.utcnow()
        conn.execute(sa.insert(table),
                     [{'name': n, 'created_at': now} for n in missing])
    return missing
