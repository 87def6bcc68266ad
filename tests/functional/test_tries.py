"""A claim's try (db/tries.py) on the real servers, from two connections:
a try undone lets its locks go at once, a kept try holds them to the
end of its transaction (another writer's try passes the provider over,
SKIP LOCKED), and undoing a later try keeps what an earlier kept try
did. On PostgreSQL these savepoints are sent beside the lock statement
and never released, behind SQLAlchemy's back; on MySQL they are
SQLAlchemy's. SQLite has one writer at a time: nothing to pass over."""

import sqlalchemy as sa

from allocworker.db import tries
from tests.functional.helpers import provider

BACKENDS = ('postgresql', 'mysql')


def _renamed(conn, provider_id, name):
    conn.exec_driver_sql("UPDATE providers SET name = '%s' WHERE id = %d"
                         % (name, provider_id))


def _name(conn, provider_id):
    return conn.exec_driver_sql('SELECT name FROM providers WHERE id = %d'
                                % provider_id).scalar()


def test_tries_lock_undo_and_keep_across_two_connections(rpc, database):
    uuid_, _ = provider(rpc, {'VCPU': {'total': 4}})
    engine = sa.create_engine(database, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as first, engine.connect() as second:
            pid = first.exec_driver_sql(
                "SELECT id FROM providers WHERE uuid = '%s'" % uuid_
            ).scalar()
            first.rollback()
            with first.begin():
                undone = tries.Try(first)
                locked, _used = undone.lock_unless_taken({pid})
                assert set(locked) == {pid}
                _renamed(first, pid, 'undone')
                undone.undo()
                assert _name(first, pid) != 'undone'
                # Undone: the other connection's try takes the row.
                with second.begin():
                    assert tries.Try(second).lock_unless_taken(
                        {pid}) is not None
                    # Held by the other transaction: passed over, and
                    # this transaction goes on.
                    assert tries.Try(first).lock_unless_taken(
                        {pid}) is None
                kept = tries.Try(first)
                assert kept.lock_unless_taken({pid}) is not None
                _renamed(first, pid, 'kept')
                kept.keep()
                later = tries.Try(first)
                assert later.lock_unless_taken({pid}) is not None
                _renamed(first, pid, 'later')
                later.undo()
                assert _name(first, pid) == 'kept'
                # The kept try's lock stays until the commit.
                with second.begin():
                    assert tries.Try(second).lock_unless_taken(
                        {pid}) is None
            with second.begin():
                assert _name(second, pid) == 'kept'
                assert tries.Try(second).lock_unless_taken(
                    {pid}) is not None
    finally:
        engine.dispose()
