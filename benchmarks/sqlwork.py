"""SQL the benchmark runs itself: the bare commit ceiling and the
preload of stored allocations for scale runs."""

import threading
import uuid

import sqlalchemy as sa


def commit_ceiling(database, concurrency):
    """(engine, one allocation-sized transaction) for the ``db_commit``
    row: one generation update and a two-row insert."""
    # At most 16 connections (threads beyond wait for one): PostgreSQL's
    # default max_connections is 100 and the server is shared.
    engine = sa.create_engine(database, pool_size=min(concurrency, 16),
                              max_overflow=0)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            'CREATE TABLE IF NOT EXISTS bench_rows (id %s, consumer '
            'VARCHAR(36), provider VARCHAR(36), used INTEGER)' % (
                'SERIAL PRIMARY KEY' if 'postgres' in database
                else 'INTEGER AUTO_INCREMENT PRIMARY KEY'))
        conn.exec_driver_sql(
            'CREATE TABLE IF NOT EXISTS bench_gen (id INTEGER PRIMARY '
            'KEY, generation INTEGER)')
        conn.exec_driver_sql('DELETE FROM bench_gen')
        for n in range(concurrency):
            conn.exec_driver_sql('INSERT INTO bench_gen VALUES (%d, 0)'
                                 % n)

    def one_transaction():
        me = threading.get_ident() % concurrency
        consumer = str(uuid.uuid4())
        with engine.begin() as conn:
            conn.exec_driver_sql(
                'UPDATE bench_gen SET generation = generation + 1 '
                'WHERE id = %d' % me)
            conn.exec_driver_sql(
                "INSERT INTO bench_rows (consumer, provider, used) "
                "VALUES ('%s', 'p', 1), ('%s', 'p', 512)"
                % (consumer, consumer))

    return engine, one_transaction


def preload(database, count, hosts):
    """``count`` allocations straight into allocworker's tables (one
    statement per table, spread over ``hosts`` providers as allocate would
    leave them, usage counters included), then VACUUM ANALYZE and a
    CHECKPOINT."""
    engine = sa.create_engine(database)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO consumers (uuid, project_id, user_id, "
            "consumer_type, generation, created_at) "
            "SELECT md5(random()::text || n)::uuid::text, 'bench', "
            "'bench', 'INSTANCE', 1, now() "
            "FROM generate_series(1, %d) AS n" % count)
        conn.exec_driver_sql(
            "INSERT INTO allocations (consumer_id, provider_id, "
            "resource_class_id, used, created_at) "
            "SELECT c.id, p.id, rc.id, 1, now() FROM "
            "(SELECT id, row_number() OVER () AS n FROM consumers "
            "WHERE project_id = 'bench') AS c "
            "JOIN (SELECT id, row_number() OVER (ORDER BY id) - 1 AS k "
            "FROM providers) AS p ON p.k = mod(c.n, %d) "
            "JOIN resource_classes rc ON rc.name = 'VCPU'"
            % hosts)
        # The usage counters the allocations would have moved.
        conn.exec_driver_sql(
            "INSERT INTO usages (provider_id, resource_class_id, used, "
            "free) SELECT provider_id, resource_class_id, SUM(used), "
            "-SUM(used) FROM allocations "
            "GROUP BY provider_id, resource_class_id "
            "ON CONFLICT (provider_id, resource_class_id) DO UPDATE SET "
            "used = usages.used + excluded.used, "
            "free = usages.free - excluded.used")
    # Settled as a database that grew to this size would be: otherwise
    # autovacuum's first pass over the new rows runs during the figures
    # and every process on the machine pays for it; likewise the load's
    # dirty pages are written out now, not by a checkpoint in the middle
    # of the first figures (seen: 2-s figures of 1M at 0.70 of 10k's,
    # 1.06 once measured later in the same kind of run).
    with engine.connect().execution_options(
            isolation_level='AUTOCOMMIT') as conn:
        conn.exec_driver_sql('VACUUM ANALYZE')
        conn.exec_driver_sql('CHECKPOINT')
    engine.dispose()
