"""Queries behind project limits: the project locks and what projects use.

A write judged against its projects' limits locks one row per project
(``project_locks``) after its consumers, groups and providers, in
project_id order, and only then reads what the projects use: every
commit of a concurrent writer of the same project is then either read or
still waiting for the lock.

What a project uses is kept in counters (``project_usages`` per consumer
type and class, ``project_consumers`` per consumer type), moved by every
write of allocations in its own transaction (``add``), whatever the
limits driver: they must be right the moment an operator turns limits
on. Reading them costs the same for a project of ten consumers or of ten
thousand.
"""

import random

import sqlalchemy as sa
from sqlalchemy.dialects import mysql as mysql_dml
from sqlalchemy.dialects import postgresql as postgresql_dml
from sqlalchemy.dialects import sqlite as sqlite_dml

from allocworker.db import api
from allocworker.db import prepared
from allocworker.db import schema
from allocworker.quota import rule

_locks = schema.project_locks
_c = schema.consumers
_alloc = schema.allocations
_rc = schema.resource_classes
_pu = schema.project_usages
_pc = schema.project_consumers

_LOCK = api.for_update(
    sa.select(_locks.c.project_id)
    .where(_locks.c.project_id.in_(sa.bindparam('projects', expanding=True)))
    .order_by(_locks.c.project_id))


# PostgreSQL: the same lock, prepared (same order: both sort by the
# column's collation).
_LOCK_PG = prepared.Statement('allocworker_project_locks', """
SELECT project_id FROM project_locks
WHERE project_id = ANY(%(projects)s::text[])
ORDER BY project_id
FOR UPDATE
""")


def lock_projects(conn, project_ids):
    """Lock the projects' rows in project_id order, creating missing ones.

    A missing row is inserted without a conflict error (a concurrent
    writer may insert it first) and then locked like the others; on
    MySQL the insert itself takes the row's exclusive lock, since taking a
    shared lock on a duplicate and then the exclusive one would deadlock
    two first writers of a project."""
    if not project_ids:
        return
    wanted = sorted(set(project_ids))
    if prepared.applies(conn.dialect):
        found = {row[0]
                 for row in _LOCK_PG.execute(conn, {'projects': wanted})}
    else:
        found = {row[0]
                 for row in conn.execute(_LOCK, {'projects': wanted})}
    missing = [p for p in wanted if p not in found]
    if not missing:
        return
    conn.execute(api.insert_keeping_existing(conn.dialect.name, _locks,
                                             'project_id'),
                 [{'project_id': p} for p in missing])
    if conn.dialect.name != 'mysql':
        conn.execute(_LOCK, {'projects': missing}).all()


# What projects use, in one statement built once: each class's counter
# summed over the counted consumer types, and (class name NULL) the
# consumers of the servers type.
_USAGE = sa.union_all(
    sa.select(_pu.c.project_id, _rc.c.name, sa.func.sum(_pu.c.used))
    .join(_rc, _pu.c.resource_class_id == _rc.c.id)
    .where(_pu.c.project_id.in_(sa.bindparam('projects', expanding=True)),
           _pu.c.consumer_type.in_(sa.bindparam('counted', expanding=True)))
    .group_by(_pu.c.project_id, _rc.c.name),
    sa.select(_pc.c.project_id, sa.cast(sa.null(), sa.String),
              sa.func.sum(_pc.c.consumers))
    .where(_pc.c.project_id.in_(sa.bindparam('projects', expanding=True)),
           _pc.c.consumer_type == sa.bindparam('servers_type'))
    .group_by(_pc.c.project_id))

# PostgreSQL: the same, each counter's shards summed before the class
# names are joined, and grouped under the "C" collation: a project's rows
# sorted by the database's collation cost more than the rest of the
# statement (a batch of 100 items for 63 projects, 800 counter rows: 3.7
# -> 3.2 ms of wall per read). Prepared for a few projects (planning it
# would cost more than running it); for more, planned with the projects
# as a constant array, which PostgreSQL hashes where a generic plan
# compares every row with every project in turn (63 projects among 100:
# 2.4 against 3.1-4.6 ms of wall with the project locks, below).
_USAGE_PG_TEXT = """
SELECT u.project_id, rc.name, u.used
FROM (SELECT project_id COLLATE "C" AS project_id, resource_class_id,
             sum(used) AS used
      FROM project_usages
      WHERE project_id = ANY(%(projects)s::text[])
        AND consumer_type = ANY(%(counted)s::text[])
      GROUP BY 1, 2) AS u
JOIN resource_classes AS rc ON rc.id = u.resource_class_id
UNION ALL
SELECT project_id COLLATE "C", NULL, sum(consumers) FROM project_consumers
WHERE project_id = ANY(%(projects)s::text[])
  AND consumer_type = %(servers_type)s::text
GROUP BY 1
"""
_USAGE_PG = prepared.Statement('allocworker_project_usage', _USAGE_PG_TEXT)
PREPARED_UP_TO = 8

# After the project locks in the same round trip (``locked_usage``): the
# usage as one JSON object, {project: {class name: used, '': servers,
# '#': 0 if its lock row exists}} (no class is named '' or '#'), which
# the client reads in one call where the rows cost it a fetch and a
# tuple each (63 projects: 0.5 ms of the worker's CPU less per read).
_LOCKED_USAGE_PG_TEXT = """
SELECT json_object_agg(project_id, counts) FROM (
  SELECT project_id, json_object_agg(coalesce(name, ''), used) AS counts
  FROM (%s
        UNION ALL
        SELECT project_id COLLATE "C", '#', 0 FROM project_locks
        WHERE project_id = ANY(%%(projects)s::text[])) AS found
  GROUP BY project_id) AS per_project
""" % _USAGE_PG_TEXT
_LOCKED_USAGE_PG = prepared.Statement('allocworker_locked_project_usage',
                                      _LOCKED_USAGE_PG_TEXT)
_LOCK_MARK = '#'

# The same for one project (a single allocate's), its counts alone: on
# the project's equality the generic plan reads each counter table
# through its key, where for ``= ANY(array)`` of unknown length it
# scans the small tables whole (100 projects, 800 counter rows: 0.06
# against 0.15 ms of execution).
_LOCKED_USAGE_ONE_PG = prepared.Statement(
    'allocworker_locked_project_usage_one', """
SELECT json_object_agg(coalesce(name, ''), used) FROM (
  SELECT rc.name, u.used
  FROM (SELECT resource_class_id, sum(used) AS used FROM project_usages
        WHERE project_id = %(project)s::text
          AND consumer_type = ANY(%(counted)s::text[])
        GROUP BY 1) AS u
  JOIN resource_classes AS rc ON rc.id = u.resource_class_id
  UNION ALL
  SELECT NULL, sum(consumers) FROM project_consumers
  WHERE project_id = %(project)s::text
    AND consumer_type = %(servers_type)s::text
  UNION ALL
  SELECT '#', 0 FROM project_locks WHERE project_id = %(project)s::text
) AS found
""")


def _pg(statement, text, params):
    """The prepared ``statement`` for a few projects, else ``text``."""
    return (statement if len(params['projects']) <= PREPARED_UP_TO
            else text)


def _params(project_ids, counted_types, servers_type):
    return {'projects': sorted(set(project_ids)),
            # ('' is how an untyped consumer is stored: never counted.)
            'counted': sorted(counted_types) or ['(none)'],
            'servers_type': servers_type}


def _found(project_ids, rows):
    """{project_id: {resource: used}} of the usage statement's rows."""
    found = {p: {} for p in project_ids}
    for project_id, name, used in rows:
        if used:
            resource = (rule.SERVERS if name is None
                        else rule.CLASS_PREFIX + name)
            found[project_id][resource] = int(used)
    return found


def usage(conn, project_ids, counted_types, servers_type):
    """{project_id: {resource: used}} under Nova's names:
    ``class:<class>`` summed over consumers of ``counted_types``,
    ``servers`` the number of consumers of ``servers_type``. A resource
    nobody uses is absent (0)."""
    if not project_ids:
        return {}
    params = _params(project_ids, counted_types, servers_type)
    if prepared.applies(conn.dialect):
        rows = prepared.in_one_round_trip(
            conn, [_pg(_USAGE_PG, _USAGE_PG_TEXT, params)], params)
    else:
        rows = conn.execute(_USAGE, params)
    return _found(project_ids, rows)


def locked_usage(conn, project_ids, counted_types, servers_type):
    """``lock_projects``, then ``usage`` read under the locks. On
    PostgreSQL the two statements go in one round trip (a judged
    transaction pays one, not two); a project without a lock row yet is
    given one, locked, and read again."""
    if not prepared.applies(conn.dialect) or not project_ids:
        lock_projects(conn, project_ids)
        return usage(conn, project_ids, counted_types, servers_type)
    # (The lock and the read bind the projects under one name: psycopg2
    # adapts a list once per name, 0.035 ms for 63 projects.)
    params = _params(project_ids, counted_types, servers_type)
    projects = params['projects']
    if len(projects) == 1:
        params['project'] = projects[0]
        read = _LOCKED_USAGE_ONE_PG
    else:
        read = _pg(_LOCKED_USAGE_PG, _LOCKED_USAGE_PG_TEXT, params)
    counts = prepared.in_one_round_trip(conn, [_LOCK_PG, read],
                                        params).scalar()
    if read is _LOCKED_USAGE_ONE_PG:
        counts = {projects[0]: counts} if counts else None
    found, locked = _found_in_json(project_ids, counts)
    missing = [p for p in projects if p not in locked]
    if missing:
        lock_projects(conn, missing)
        found.update(usage(conn, missing, counted_types, servers_type))
    return found


def _found_in_json(project_ids, counts):
    """({project_id: {resource: used}}, projects whose lock row was
    read) of the locked usage read as JSON."""
    found = {p: {} for p in project_ids}
    locked = set()
    for project_id, named in (counts or {}).items():
        if named.pop(_LOCK_MARK, None) is not None:
            locked.add(project_id)
        found[project_id] = {
            rule.CLASS_PREFIX + name if name else rule.SERVERS: int(used)
            for name, used in named.items() if used}
    return found, locked


# Rows each count is split over (``schema.project_usages``): two
# concurrent writers of a project meet on a counter row one time in
# SHARDS; a read sums SHARDS times the rows.
SHARDS = 4


def shard(conn):
    """The counter rows ``conn``'s transaction moves: all of them on one,
    drawn at its first write. A transaction of several writes (a shared
    claim transaction) that drew for each would hold several rows of a
    project, taken in no order, and deadlock with another such."""
    return api.per_transaction(conn, 'shard',
                               lambda: random.randrange(SHARDS))


def add(conn, used, consumers, shard=0):
    """Move the counters by ``used`` {(project_id, consumer_type,
    class_id): delta} and ``consumers`` {(project_id, consumer_type):
    delta} (types as stored: '' for none) on rows ``shard``, one upsert
    each (a missing row is created, an existing one moved), rows in key
    order so that concurrent writers lock shared counter rows in one
    order."""
    dialect = conn.dialect.name
    rows = [{'project_id': p, 'consumer_type': t, 'resource_class_id': c,
             'shard': shard, 'used': d}
            for (p, t, c), d in sorted(used.items()) if d]
    if rows:
        conn.execute(_upsert(dialect, _pu, 'used'), rows)
    rows = [{'project_id': p, 'consumer_type': t, 'shard': shard,
             'consumers': d}
            for (p, t), d in sorted(consumers.items()) if d]
    if rows:
        conn.execute(_upsert(dialect, _pc, 'consumers'), rows)


_UPSERTS = {}


def _upsert(dialect, table, column):
    """One statement for every row (executemany, compiled once), in the
    style of the provider usage counters' (``providers.add_usage``)."""
    statement = _UPSERTS.get((dialect, table.name))
    if statement is not None:
        return statement
    if dialect == 'mysql':
        insert = mysql_dml.insert(table)
        statement = insert.on_duplicate_key_update(
            {column: table.c[column] + insert.inserted[column]})
    else:
        insert = (postgresql_dml.insert if dialect == 'postgresql'
                  else sqlite_dml.insert)(table)
        statement = insert.on_conflict_do_update(
            index_elements=list(table.primary_key.columns),
            set_={column: table.c[column] + insert.excluded[column]})
    _UPSERTS[(dialect, table.name)] = statement
    return statement


def _counted_off(table, keys, value, held):
    """Counts (summed over their rows) that differ from ``held`` (a
    subquery of the same keys and ``value``), and held values with no
    counter row."""
    counters = (sa.select(*[table.c[k] for k in keys],
                          sa.cast(sa.func.sum(table.c[value]),
                                  sa.BigInteger).label(value))
                .group_by(*[table.c[k] for k in keys])
                .subquery('counters'))
    on = sa.and_(*[held.c[k] == counters.c[k] for k in keys])
    counted = sa.func.coalesce(counters.c[value], 0)
    held_value = sa.func.coalesce(held.c[value], 0)
    return sa.union_all(
        sa.select(*[counters.c[k] for k in keys],
                  counted.label('counted'), held_value.label('held'))
        .select_from(counters).outerjoin(held, on)
        .where(counted != held_value),
        sa.select(*[held.c[k] for k in keys], sa.literal(0),
                  held.c[value])
        .select_from(held).outerjoin(counters, on)
        .where(counters.c[keys[0]].is_(None), held.c[value] != 0))


def _usage_off():
    held = (sa.select(_c.c.project_id, _c.c.consumer_type,
                      _alloc.c.resource_class_id,
                      # SUM is a decimal on some backends.
                      sa.cast(sa.func.sum(_alloc.c.used),
                              sa.BigInteger).label('used'))
            .join(_alloc, _alloc.c.consumer_id == _c.c.id)
            .group_by(_c.c.project_id, _c.c.consumer_type,
                      _alloc.c.resource_class_id)
            .subquery('held'))
    return _counted_off(_pu, ('project_id', 'consumer_type',
                              'resource_class_id'), 'used', held)


def _consumers_off():
    held = (sa.select(_c.c.project_id, _c.c.consumer_type,
                      sa.func.count().label('consumers'))
            .group_by(_c.c.project_id, _c.c.consumer_type)
            .subquery('held'))
    return _counted_off(_pc, ('project_id', 'consumer_type'), 'consumers',
                        held)


def counters_off(conn):
    """(usage rows, consumer rows) whose counter differs from what the
    consumers and their allocations hold: each read in one statement
    (one snapshot), as tuples of the key, the counted value and the
    held one."""
    return ([tuple(row) for row in conn.execute(_usage_off())],
            [tuple(row) for row in conn.execute(_consumers_off())])


def refresh(conn):
    """Correct every counter that differs from the books; the number of
    counters corrected.

    Each difference is read in one statement (one snapshot, in which
    every committed write moved its counters and its allocations alike)
    and added to the counter as a delta, the way writers move it, so a
    writer that commits meanwhile keeps its own move: safe while this
    release's workers write, not while a worker of a release that keeps
    no project counters still does (a rolling upgrade: run it after)."""
    usage, consumers = counters_off(conn)
    add(conn, {row[:3]: row[4] - row[3] for row in usage},
        {row[:2]: row[3] - row[2] for row in consumers})
    return len(usage) + len(consumers)
