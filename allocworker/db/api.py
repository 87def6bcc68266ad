"""Engine set-up and the two kinds of transaction every query runs in.

``reader()`` yields a connection for one read; ``writer()`` one for a
write transaction. Retries belong outside these blocks, so every attempt
is a new transaction.
"""

import contextlib
import os
import threading

from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa
from sqlalchemy.dialects import mysql as mysql_dml
from sqlalchemy.dialects import postgresql as postgresql_dml
from sqlalchemy.dialects import sqlite as sqlite_dml

from allocworker.db import generations
from allocworker.db import kept
from allocworker.db import prepared

_lock = threading.Lock()
_facade = None
# Write transactions and single read statements on connections kept
# between uses (``kept``); None on SQLite, whose connections are files.
_writes = _reads = None


def configure(conf, trace=False):
    """Build this process's engine; call again after fork. ``trace``: this
    process traces (``metrics.tracing.enabled()``), so each transaction
    of a traced call is a span."""
    global _facade, _writes, _reads
    _make_sqlite_directory(conf.database.connection)
    with _lock:
        facade = enginefacade.transaction_context()
        facade.configure(**_engine_options(conf))
        engine = facade.writer.get_engine()
        _tune(engine)
        if trace:
            _trace(engine)
        stale = facade.reader.get_engine()   # slave_connection, if set
        if stale is not engine:
            _tune(stale)
            if trace:
                _trace(stale)
        _facade = facade
        _writes = _reads = None
        if engine.dialect.name != 'sqlite':
            size = conf.database.max_pool_size or 5
            recycle = conf.database.connection_recycle_time
            _writes = kept.Keeper(engine, {}, size, recycle)
            # On the writer too: the reads kept connections serve (a
            # consumer's allocations and generation) guard callers' writes.
            _reads = kept.Keeper(engine, {'isolation_level': 'AUTOCOMMIT'},
                                 size, recycle)


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
    # mysql_wsrep_sync_wait: on Galera, reads wait until the node has
    # applied every write set the cluster committed before them (oslo.db
    # sets it per connection). Writes never need it: they lock the rows
    # they judge, and through HAProxy they all reach one node anyway.
    # slave_connection: the asynchronous reader of ``stale_reader()``.
    for name in ('max_pool_size', 'max_overflow', 'pool_timeout',
                 'connection_recycle_time', 'mysql_sql_mode',
                 'mysql_wsrep_sync_wait', 'slave_connection'):
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
    if prepared.applies(engine.dialect):
        sa.event.listen(engine, 'connect',
                        lambda dbapi_conn, _record:
                        prepared.tune_session(dbapi_conn))
    # Connections made before the listener or option existed are dropped.
    engine.dispose()


def _trace(engine):
    # Imported only here: osprofiler costs every command a tenth of a
    # second to start, and only services trace.
    from allocworker.db import traced
    traced.engine(engine)


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
def stale_reader(snapshot=False):
    """A read that may be a moment stale: on ``[database]
    slave_connection`` when one is set (a replica, or Galera's other
    nodes), else as ``reader()`` (``snapshot()`` with ``snapshot``).
    Listings and reporting only: a read that decides a write is made
    inside that write's transaction, on the writer."""
    with _get_facade().reader.async_.connection.using(_Scope()) as conn:
        if snapshot and conn.dialect.name != 'sqlite':
            conn.exec_driver_sql(
                'SET TRANSACTION ISOLATION LEVEL REPEATABLE READ')
        yield conn


def one_statement(query, *args):
    """``query(conn, *args)``, one read statement, run outside any
    transaction: one statement is one snapshot on every backend, and
    BEGIN and ROLLBACK would be two more round trips for nothing. Not for
    several statements that must agree (use ``snapshot()``). A kept
    connection found lost is replaced and the read runs once more."""
    if _reads is None:
        with reader() as conn:
            return query(conn, *args)
    try:
        return _read_on_kept(query, args)
    except ConnectionLost:
        return _read_on_kept(query, args)


def _read_on_kept(query, args):
    with _reads.connection() as (conn, reused):
        try:
            found = query(conn, *args)
        except db_exc.DBConnectionError as exc:
            if reused:
                raise ConnectionLost(exc) from exc
            raise
        conn.rollback()  # ends SQLAlchemy's autobegun block; no round trip
        return found


@contextlib.contextmanager
def writer():
    """One write transaction; yields its connection.

    If the connection, kept from an earlier transaction, turns out lost
    before COMMIT, nothing was written: ``ConnectionLost`` says the
    transaction may run again (``retry.write`` does)."""
    if _writes is None:
        with _get_facade().writer.connection.using(_Scope()) as conn:
            if conn.dialect.name == 'sqlite':
                generations.take_write_lock(conn)
            yield conn
        return
    with _writes.connection() as (conn, reused):
        transaction = conn.begin()
        try:
            yield conn
        except db_exc.DBConnectionError as exc:
            if reused:
                raise ConnectionLost(exc) from exc
            raise
        except BaseException:
            transaction.rollback()
            raise
        transaction.commit()


def database_key(conn):
    """``conn``'s database URL as a string, a key for what a process
    remembers per database (rendered once per engine: rendering a URL
    costs some 40 us, more than the lookups it keys)."""
    engine = conn.engine
    key = getattr(engine, '_allocworker_database_key', None)
    if key is None:
        key = engine._allocworker_database_key = str(engine.url)
    return key


def per_transaction(conn, key, make):
    """``make()``, made once per transaction of ``conn`` for ``key``
    (kept on the connection with the transaction it was made in)."""
    transaction = conn.get_transaction()
    if transaction is None:
        return make()
    made = conn.info.get('allocworker_per_transaction')
    if made is None or made[0] is not transaction:
        made = conn.info['allocworker_per_transaction'] = (transaction, {})
    if key not in made[1]:
        made[1][key] = make()
    return made[1][key]


def insert_keeping_existing(dialect, table, key):
    """An INSERT of ``table`` that leaves a row whose ``key`` (a primary
    key column) is already stored as it is, waiting for a writer that
    is storing it to commit; on MySQL the duplicate takes the row's
    exclusive lock (no shared lock first, which two first writers would
    deadlock on)."""
    if dialect == 'mysql':
        insert = mysql_dml.insert(table)
        return insert.on_duplicate_key_update(
            {key: insert.inserted[key]})
    return (postgresql_dml.insert if dialect == 'postgresql'
            else sqlite_dml.insert)(table).on_conflict_do_nothing()


def for_update(query):
    """Lock the selected rows until commit (a no-op where SQLite has none)."""
    return query.with_for_update()


class ConcurrentUpdate(Exception):
    """A concurrent writer moved a row this transaction depended on."""


class ConnectionLost(db_exc.DBConnectionError):
    """A kept connection was lost before its transaction committed:
    nothing was written, and the transaction may run again."""
