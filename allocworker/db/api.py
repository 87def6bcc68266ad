"""Engine set-up and the two kinds of transaction every query runs in.

``reader()`` yields a connection for one read; ``writer()`` one for a
write transaction. Retries belong outside these blocks, so every attempt
is a new transaction.
"""

import contextlib
import os
import threading

from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa

from allocworker.db import generations
from allocworker.db import writes_pg

_lock = threading.Lock()
_facade = None


def configure(conf):
    """Build this process's engine; call again after fork."""
    global _facade
    _make_sqlite_directory(conf.database.connection)
    with _lock:
        facade = enginefacade.transaction_context()
        facade.configure(**_engine_options(conf))
        engine = facade.writer.get_engine()
        _tune(engine)
        _facade = facade


def _make_sqlite_directory(url):
    """The embedded database's folder ([DEFAULT] state_path) may be new."""
    url = sa.engine.make_url(url)
    if url.get_backend_name() == 'sqlite' and url.database not in (
            None, '', ':memory:'):
        os.makedirs(os.path.dirname(os.path.abspath(url.database)),
                    exist_ok=True)


def _engine_options(conf):
    db = conf.database
    options = dict(connection=db.connection, sqlite_fk=True,
                   max_retries=db.max_retries,
                   retry_interval=db.retry_interval)
    for name in ('max_pool_size', 'max_overflow', 'pool_timeout',
                 'connection_recycle_time', 'mysql_sql_mode'):
        options[name] = getattr(db, name)
    return options


def _tune(engine):
    """Make every backend settle races the same way.

    PostgreSQL and MySQL run at READ COMMITTED: writers lock the rows they
    depend on first, then every later statement sees all commits made before
    the lock was granted. SQLite has one writer at a time; WAL lets readers
    go on beside it, and a busy timeout queues writers instead of failing.
    """
    if engine.dialect.name == 'sqlite':
        @sa.event.listens_for(engine, 'connect')
        def _sqlite_pragmas(dbapi_conn, _record):
            cursor = dbapi_conn.cursor()
            cursor.execute('PRAGMA journal_mode=WAL')
            cursor.execute('PRAGMA busy_timeout=30000')
            cursor.close()
    else:
        engine.update_execution_options(isolation_level='READ COMMITTED')
    if writes_pg.applies(engine.dialect):
        sa.event.listen(engine, 'connect',
                        lambda dbapi_conn, _record:
                        writes_pg.tune_session(dbapi_conn))
    # Connections made before the listener or option existed are dropped.
    engine.dispose()


def get_engine():
    return _get_facade().writer.get_engine()


def _get_facade():
    if _facade is None:
        raise RuntimeError('allocworker.db.api.configure() was not called')
    return _facade


class _Scope(object):
    """A fresh object per block, so blocks never join an outer transaction."""


@contextlib.contextmanager
def reader():
    with _get_facade().reader.connection.using(_Scope()) as conn:
        yield conn


@contextlib.contextmanager
def snapshot():
    """One read transaction whose statements all see the same snapshot:
    REPEATABLE READ for this transaction on PostgreSQL and MySQL (whose
    default here is READ COMMITTED, where each statement sees the latest
    commits). SQLite's reader transaction is one WAL snapshot already."""
    with _get_facade().reader.connection.using(_Scope()) as conn:
        if conn.dialect.name != 'sqlite':
            conn.exec_driver_sql(
                'SET TRANSACTION ISOLATION LEVEL REPEATABLE READ')
        yield conn


@contextlib.contextmanager
def statement():
    """A connection for one read statement, outside any transaction: one
    statement is one snapshot on every backend, and BEGIN and ROLLBACK
    would be two more round trips for nothing. Not for several
    statements that must agree (use ``snapshot()``)."""
    engine = _get_facade().reader.get_engine()
    with engine.connect() as conn:
        if conn.dialect.name != 'sqlite':
            conn = conn.execution_options(isolation_level='AUTOCOMMIT')
        yield conn


@contextlib.contextmanager
def writer():
    """One write transaction; yields its connection."""
    with _get_facade().writer.connection.using(_Scope()) as conn:
        if conn.dialect.name == 'sqlite':
            generations.take_write_lock(conn)
        yield conn


def for_update(query):
    """Lock the selected rows until commit (a no-op where SQLite has none)."""
    return query.with_for_update()


class ConcurrentUpdate(Exception):
    """A concurrent writer moved a row this transaction depended on."""
