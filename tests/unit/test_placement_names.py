"""The import's consumer pages get their project, user and type names
from Placement's tables, each read once while the names kept stay under
``KNOWN_NAMES`` (memory bounded whatever the cloud), read again after."""

import datetime

import sqlalchemy as sa

from allocworker.db.placement import placement_source as source

WHEN = datetime.datetime(2026, 12, 1)


def _source():
    engine = sa.create_engine('sqlite://')
    with engine.begin() as conn:
        for table, column in (('projects', 'external_id'),
                              ('users', 'external_id'),
                              ('consumer_types', 'name')):
            conn.exec_driver_sql('CREATE TABLE %s (id INTEGER PRIMARY KEY, '
                                 '%s VARCHAR(255))' % (table, column))
        conn.exec_driver_sql("INSERT INTO projects VALUES (1, 'p1'), "
                             "(2, 'p2'), (3, 'p3')")
        conn.exec_driver_sql("INSERT INTO users VALUES (1, 'u1'), (2, 'u2')")
        conn.exec_driver_sql("INSERT INTO consumer_types VALUES "
                             "(1, 'INSTANCE')")
    return engine


def _row(n, project, user, kind):
    return (n, 'c%d' % n, 1, project, user, kind, WHEN, None)


def _reads(conn):
    statements = []
    sa.event.listen(conn, 'before_cursor_execute',
                    lambda *args: statements.append(args[2]))
    return statements


def test_names_are_read_once_across_pages():
    with _source().connect() as conn:
        reads = _reads(conn)
        known = {}
        first = source._named(conn, [_row(1, 1, 1, 1), _row(2, 2, 2, None)],
                              known)
        assert [r[3:6] for r in first] == [('p1', 'u1', 'INSTANCE'),
                                           ('p2', 'u2', None)]
        assert len(reads) == 3
        second = source._named(conn, [_row(3, 2, 1, 1)], known)
        assert second[0][3:6] == ('p2', 'u1', 'INSTANCE')
        assert len(reads) == 3  # all known already


def test_a_missing_project_is_none_and_not_read_again():
    with _source().connect() as conn:
        reads = _reads(conn)
        known = {}
        rows = source._named(conn, [_row(1, 9, 1, None)], known)
        assert rows[0][3:5] == (None, 'u1') and len(reads) == 2
        source._named(conn, [_row(2, 9, 1, None)], known)
        assert len(reads) == 2


def test_names_past_the_bound_are_forgotten(monkeypatch):
    monkeypatch.setattr(source, 'KNOWN_NAMES', 2)
    with _source().connect() as conn:
        known = {}
        source._named(conn, [_row(1, 1, 1, 1), _row(2, 2, 1, 1)], known)
        rows = source._named(conn, [_row(3, 3, 1, 1)], known)
        assert rows[0][3] == 'p3'
        assert set(known['project']) == {3}
