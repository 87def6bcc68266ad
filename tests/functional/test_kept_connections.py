"""Connections the workers keep between transactions (db/kept.py), on
the real servers: when the database server drops them (a restart, a
killed backend), the next writes and reads still succeed on fresh
connections, and nothing is written twice."""

import os
import time
import uuid

import pytest
import sqlalchemy as sa

from allocworker.db import kept
from tests.functional import services
from tests.functional.helpers import allocate, in_parallel, one, provider

BACKENDS = ('postgresql', 'mysql')


def _drop_connections(backend, url):
    """Close, from the server's side, every connection to this database
    but the one asking."""
    name = sa.engine.make_url(url).database
    admin = sa.create_engine(
        services.SERVER_URLS[backend] + ('/postgres' if backend ==
                                         'postgresql' else '/'),
        isolation_level='AUTOCOMMIT', poolclass=sa.pool.NullPool)
    with admin.connect() as conn:
        if backend == 'postgresql':
            dropped = conn.exec_driver_sql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = '%s' AND pid <> pg_backend_pid()"
                % name).all()
        else:
            dropped = conn.exec_driver_sql(
                "SELECT id FROM information_schema.processlist "
                "WHERE db = '%s' AND id <> connection_id()" % name).all()
            for (thread_id,) in dropped:
                conn.exec_driver_sql('KILL %d' % thread_id)
    admin.dispose()
    assert dropped, 'the workers held no connection to drop'


@pytest.mark.parametrize('idle', [False, True], ids=['busy', 'idle'])
def test_writes_and_reads_go_on_after_the_server_drops_connections(
        rpc, backend, database, idle):
    rp, _ = provider(rpc, {'VCPU': {'total': 1000}})
    before = [str(uuid.uuid4()) for _ in range(24)]
    after = [str(uuid.uuid4()) for _ in range(24)]
    # Every worker process writes and reads, so each keeps connections.
    for item in in_parallel(lambda c: allocate(rpc, c, {rp: {'VCPU': 1}}),
                            before):
        assert item['status'] == 200, item
    assert all(i['status'] == 200 for i in in_parallel(
        lambda c: one(rpc.get_allocations(consumer_uuids=[c])), before))
    _drop_connections(backend, database)
    if idle:
        # Past the idle limit, kept connections are pinged before use.
        time.sleep(kept.PING_AFTER_IDLE_SECONDS + 0.2)
    for item in in_parallel(lambda c: allocate(rpc, c, {rp: {'VCPU': 1}}),
                            after):
        assert (item['status'], item['consumer_generation']) == (200, 1), \
            item
    read = rpc.get_allocations(consumer_uuids=before + after)
    assert [i['status'] for i in read['items']] == [200] * 48, read
    usage = one(rpc.get_usages(provider_uuids=[rp]))['usages']
    assert usage == {'VCPU': 48}


def test_an_update_after_the_server_drops_connections_moves_once(
        rpc, backend, database):
    """The transaction that met the lost connection wrote nothing; its
    rerun on a fresh connection wrote once."""
    rp, _ = provider(rpc, {'VCPU': {'total': 1000}})
    consumers = [str(uuid.uuid4()) for _ in range(12)]
    in_parallel(lambda c: allocate(rpc, c, {rp: {'VCPU': 1}}), consumers)
    _drop_connections(backend, database)
    for item in in_parallel(
            lambda c: allocate(rpc, c, {rp: {'VCPU': 2}}, generation=1),
            consumers):
        assert (item['status'], item['consumer_generation']) == (200, 2), \
            item
    usage = one(rpc.get_usages(provider_uuids=[rp]))['usages']
    assert usage == {'VCPU': 24}


def _backend_id(conn):
    function = ('pg_backend_pid()' if conn.dialect.name == 'postgresql'
                else 'connection_id()')
    return conn.exec_driver_sql('SELECT %s' % function).scalar()


@pytest.mark.usefixtures('service_layer')
def test_a_forked_child_neither_uses_nor_closes_its_parents_connections():
    from allocworker.db import api as db
    parent_reader = db.one_statement(_backend_id)
    with db.writer() as conn:
        parent_writer = _backend_id(conn)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            child_reader = db.one_statement(_backend_id)
            with db.writer() as conn:
                child_writer = _backend_id(conn)
            code = 0 if {child_reader, child_writer}.isdisjoint(
                {parent_reader, parent_writer}) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # The parent's sessions were left alone by the child.
    assert db.one_statement(_backend_id) == parent_reader
    with db.writer() as conn:
        assert _backend_id(conn) == parent_writer


@pytest.mark.usefixtures('service_layer')
def test_a_failed_commit_leaves_no_transaction_open_for_the_next_writer(
        backend):
    from oslo_db import exception as db_exc
    from allocworker.db import api as db
    if backend != 'postgresql':
        pytest.skip('a constraint checked at COMMIT is PostgreSQL-only here')
    with pytest.raises(db_exc.DBError):
        with db.writer() as conn:
            conn.exec_driver_sql(
                'CREATE TEMPORARY TABLE once (x int UNIQUE DEFERRABLE '
                'INITIALLY DEFERRED) ON COMMIT DROP')
            conn.exec_driver_sql('INSERT INTO once VALUES (1), (1)')
    # The same kept connection serves the next transaction.
    with db.writer() as conn:
        assert conn.exec_driver_sql('SELECT 1').scalar() == 1
