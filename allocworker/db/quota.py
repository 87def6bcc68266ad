"""Queries behind project limits: the project locks and what projects use.

A write judged against its projects' limits locks one row per project
(``project_locks``) before anything else, in project_id order, and only
then counts what the projects use: every commit of a concurrent writer of
the same project is then either counted or still waiting for the lock.
"""

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

_LOCK = api.for_update(
    sa.select(_locks.c.project_id)
    .where(_locks.c.project_id.in_(sa.bindparam('ids', expanding=True)))
    .order_by(_locks.c.project_id))


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
    found = {row[0] for row in conn.execute(_LOCK, {'ids': wanted})}
    missing = [p for p in wanted if p not in found]
    if not missing:
        return
    dialect = conn.dialect.name
    rows = [{'project_id': p} for p in missing]
    if dialect == 'mysql':
        statement = mysql_dml.insert(_locks)
        conn.execute(statement.on_duplicate_key_update(
            project_id=statement.inserted.project_id), rows)
        return
    insert = (postgresql_dml.insert if dialect == 'postgresql'
              else sqlite_dml.insert)
    conn.execute(insert(_locks).on_conflict_do_nothing(), rows)
    conn.execute(_LOCK, {'ids': missing}).all()


# What projects use, in one statement built once: each class's sum over
# the consumers of the counted types, and (class name NULL) the number
# of consumers of the servers type.
_USAGE = sa.union_all(
    sa.select(_c.c.project_id, _rc.c.name, sa.func.sum(_alloc.c.used))
    .select_from(_c)
    .join(_alloc, _alloc.c.consumer_id == _c.c.id)
    .join(_rc, _alloc.c.resource_class_id == _rc.c.id)
    .where(_c.c.project_id.in_(sa.bindparam('projects', expanding=True)),
           _c.c.consumer_type.in_(sa.bindparam('counted', expanding=True)))
    .group_by(_c.c.project_id, _rc.c.name),
    sa.select(_c.c.project_id, sa.cast(sa.null(), sa.String),
              sa.func.count())
    .where(_c.c.project_id.in_(sa.bindparam('projects', expanding=True)),
           _c.c.consumer_type == sa.bindparam('servers_type'))
    .group_by(_c.c.project_id))


# PostgreSQL: the same, prepared once per connection, each consumer's
# allocations read through their index in a subquery of their own: left
# to choose, the planner scanned every allocation to hash-join a
# project's few hundred consumers (18 ms at 60,000 allocations, O(the
# whole table) per write).
_USAGE_PG = prepared.Statement('allocworker_project_usage', """
SELECT c.project_id, rc.name, sum(a.used)
FROM consumers AS c
CROSS JOIN LATERAL (
    SELECT resource_class_id, used FROM allocations
    WHERE consumer_id = c.id OFFSET 0) AS a
JOIN resource_classes AS rc ON rc.id = a.resource_class_id
WHERE c.project_id = ANY(%(projects)s::text[])
  AND c.consumer_type = ANY(%(counted)s::text[])
GROUP BY c.project_id, rc.name
UNION ALL
SELECT project_id, NULL, count(*) FROM consumers
WHERE project_id = ANY(%(projects)s::text[])
  AND consumer_type = %(servers_type)s::text
GROUP BY project_id
""")


def usage(conn, project_ids, counted_types, servers_type):
    """{project_id: {resource: used}} under Nova's names:
    ``class:<class>`` summed over consumers of ``counted_types``,
    ``servers`` the number of consumers of ``servers_type``. A resource
    nobody uses is absent (0)."""
    found = {p: {} for p in project_ids}
    if not project_ids:
        return found
    params = {'projects': sorted(set(project_ids)),
              # ('' is how an untyped consumer is stored: never counted.)
              'counted': sorted(counted_types) or ['(none)'],
              'servers_type': servers_type}
    if prepared.applies(conn.dialect):
        rows = _USAGE_PG.execute(conn, params)
    else:
        rows = conn.execute(_USAGE, params)
    for project_id, name, used in rows:
        resource = rule.SERVERS if name is None else rule.CLASS_PREFIX + name
        found[project_id][resource] = int(used)
    return found
