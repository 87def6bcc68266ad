"""Queries behind project limits: the project locks and what projects use.

A write judged against its projects' limits locks one row per project
(``project_locks``) after its consumers, groups and providers, in
project_id order, and only then reads what the projects use: every
commit of a concurrent writer of the same project is then either read or
still waiting for the lock.

What a project uses is counted by every write of allocations in its own
transaction, whatever the limits driver (``db.project_counters``: shard
rows plus the counts in the lock row). Reading it costs the same for a
project of ten consumers or of ten thousand.
"""

import sqlalchemy as sa

from allocworker.db import api
from allocworker.db.catalog import providers as db_providers
from allocworker.db.catalog import resource_classes
from allocworker.db.limits import project_counters
from allocworker.db import prepared
from allocworker.db import schema
from allocworker import limit_names

_locks = schema.project_locks
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


# What projects use, in one statement built once (one snapshot): each
# class's shard count summed over the counted consumer types, (class name
# NULL) the consumers of the servers type, and (used NULL) the lock row's
# counts.
_USAGE = sa.union_all(
    sa.select(_pu.c.project_id, _rc.c.name, sa.func.sum(_pu.c.used),
              sa.cast(sa.null(), sa.Text))
    .join(_rc, _pu.c.resource_class_id == _rc.c.id)
    .where(_pu.c.project_id.in_(sa.bindparam('projects', expanding=True)),
           _pu.c.consumer_type.in_(sa.bindparam('counted', expanding=True)))
    .group_by(_pu.c.project_id, _rc.c.name),
    sa.select(_pc.c.project_id, sa.cast(sa.null(), sa.String),
              sa.func.sum(_pc.c.consumers), sa.cast(sa.null(), sa.Text))
    .where(_pc.c.project_id.in_(sa.bindparam('projects', expanding=True)),
           _pc.c.consumer_type == sa.bindparam('servers_type'))
    .group_by(_pc.c.project_id),
    sa.select(_locks.c.project_id, sa.cast(sa.null(), sa.String),
              sa.cast(sa.null(), sa.BigInteger),
              sa.func.coalesce(_locks.c.counts, '{}'))
    .where(_locks.c.project_id.in_(
        sa.bindparam('projects', expanding=True))))

# PostgreSQL, after the project locks in the same round trip
# (``locked_usage``): the same as one JSON object, {project: {class name:
# used, '': servers, '#': the lock row's counts}} (no class is named ''
# or '#'), which the client reads in one call where rows cost it a fetch
# and a tuple each (63 projects: 0.5 ms of the worker's CPU less per
# read). Each shard count is summed before the class names are joined,
# and grouped under the "C" collation: a project's rows sorted by the
# database's collation cost more than the rest of the statement.
# Prepared for a few projects (planning it would cost more than running
# it); for more, planned with the projects as a constant array, which
# PostgreSQL hashes where a generic plan compares every row with every
# project in turn.
_LOCKED_USAGE_PG_TEXT = """
SELECT json_object_agg(project_id, counts) FROM (
  SELECT project_id, json_object_agg(coalesce(name, ''), used) AS counts
  FROM (SELECT u.project_id, rc.name, to_json(u.used) AS used
        FROM (SELECT project_id COLLATE "C" AS project_id,
                     resource_class_id, sum(used) AS used
              FROM project_usages
              WHERE project_id = ANY(%(projects)s::text[])
                AND consumer_type = ANY(%(counted)s::text[])
              GROUP BY 1, 2) AS u
        JOIN resource_classes AS rc ON rc.id = u.resource_class_id
        UNION ALL
        SELECT project_id COLLATE "C", NULL, to_json(sum(consumers))
        FROM project_consumers
        WHERE project_id = ANY(%(projects)s::text[])
          AND consumer_type = %(servers_type)s::text
        GROUP BY 1
        UNION ALL
        SELECT project_id COLLATE "C", '#', coalesce(counts, '{}')::json
        FROM project_locks
        WHERE project_id = ANY(%(projects)s::text[])) AS found
  GROUP BY project_id) AS per_project
"""
_LOCKED_USAGE_PG = prepared.Statement('allocworker_locked_project_usage',
                                      _LOCKED_USAGE_PG_TEXT)
PREPARED_UP_TO = 8
_LOCK_MARK = '#'

# The same for one project (a single allocate's), its counts alone: on
# the project's equality the generic plan reads each counter table
# through its key, where for ``= ANY(array)`` of unknown length it
# scans the small tables whole (100 projects, 800 counter rows: 0.06
# against 0.15 ms of execution).
_LOCKED_USAGE_ONE_PG_TEXT = """
SELECT json_object_agg(coalesce(name, ''), used) FROM (
  SELECT rc.name, to_json(u.used) AS used
  FROM (SELECT resource_class_id, sum(used) AS used FROM project_usages
        WHERE project_id = %(project)s::text
          AND consumer_type = ANY(%(counted)s::text[])
        GROUP BY 1) AS u
  JOIN resource_classes AS rc ON rc.id = u.resource_class_id
  UNION ALL
  SELECT NULL, to_json(sum(consumers)) FROM project_consumers
  WHERE project_id = %(project)s::text
    AND consumer_type = %(servers_type)s::text
  UNION ALL
  SELECT '#', coalesce(counts, '{}')::json FROM project_locks
  WHERE project_id = %(project)s::text
) AS found
"""
_LOCKED_USAGE_ONE_PG = prepared.Statement(
    'allocworker_locked_project_usage_one', _LOCKED_USAGE_ONE_PG_TEXT)


def _params(project_ids, counted_types, servers_type):
    return {'projects': sorted(set(project_ids)),
            # ('' is how an untyped consumer is stored: never counted.)
            'counted': sorted(counted_types) or ['(none)'],
            'servers_type': servers_type}


# Resource names by class name ('' and None: servers), made once each.
_resources = {'': limit_names.SERVERS, None: limit_names.SERVERS}


def _resource(name):
    resource = _resources.get(name)
    if resource is None:
        resource = _resources[name] = limit_names.CLASS_PREFIX + name
    return resource


class _Found(object):
    """What the usage reads found: {project_id: {resource: used}} under
    Nova's names, and the lock rows' decoded counts."""

    def __init__(self, project_ids, counted_types, servers_type):
        self.usage = {p: {} for p in project_ids}
        self.locked = {}
        self._counted = counted_types, servers_type

    def shards(self, project_id, named):
        """Add {class name, or '' or None for servers: used}."""
        usage = self.usage[project_id]
        for name, used in named.items():
            if used:
                resource = _resource(name)
                usage[resource] = usage.get(resource, 0) + int(used)

    def named(self, conn):
        """The usage, the lock rows' counts added under their classes'
        names (a class is deleted only once nothing holds it)."""
        counted_types, servers_type = self._counted
        ids = project_counters.class_ids(self.locked.values(), counted_types)
        resources = {
            str(class_id): _resource(name) for class_id, name in
            resource_classes.names_by_id(conn, {int(i) for i in ids}).items()}
        for project_id, counts in self.locked.items():
            project_counters.add_counted(
                self.usage[project_id], counts, counted_types, servers_type,
                resources, limit_names.SERVERS)
        return self.usage


def usage(conn, project_ids, counted_types, servers_type):
    """{project_id: {resource: used}} under Nova's names:
    ``class:<class>`` summed over consumers of ``counted_types``,
    ``servers`` the number of consumers of ``servers_type``. A resource
    nobody uses is absent (0)."""
    return _read(conn, project_ids, counted_types, servers_type).named(conn)


def _read(conn, project_ids, counted_types, servers_type):
    found = _Found(project_ids, counted_types, servers_type)
    if project_ids:
        for project_id, name, used, counts in conn.execute(
                _USAGE, _params(project_ids, counted_types, servers_type)):
            if counts is None:
                found.shards(project_id, {name: used})
            else:
                found.locked[project_id] = project_counters.decode(counts)
    return found


def locked_usage(conn, project_ids, counted_types, servers_type):
    """``lock_projects``, then ``usage`` read under the locks, the lock
    rows' counts kept for this transaction's writes
    (``project_counters.remember``). On PostgreSQL the two statements go
    in one round trip (a judged transaction pays one, not two); a
    project without a lock row yet is given one, locked, and read
    again."""
    if not prepared.applies(conn.dialect) or not project_ids:
        lock_projects(conn, project_ids)
        found = _read(conn, project_ids, counted_types, servers_type)
        project_counters.remember(conn, found.locked)
        return found.named(conn)
    params = _params(project_ids, counted_types, servers_type)
    read = _usage_read(params)
    counts = prepared.in_one_round_trip(conn, [_LOCK_PG, read],
                                        params).scalar()
    return _locked(conn, params, counts, counted_types, servers_type)


def capacity_and_locked_usage(conn, provider_ids, project_ids,
                              counted_types, servers_type):
    """(``providers.capacity_state``, ``locked_usage``) of a plan that
    has locked its providers, in one round trip on PostgreSQL (a judged
    single allocate pays no round trip for its limits); elsewhere
    (capacity state, None), and the usage is read later."""
    if not prepared.applies(conn.dialect) or not project_ids or \
            not provider_ids:
        return db_providers.capacity_state(conn, provider_ids), None
    params = _params(project_ids, counted_types, servers_type)
    params['ids'] = sorted(provider_ids)
    both = _CAPACITY_AND_USAGE[_usage_read(params)]
    rows, counts = [], None
    for row in prepared.in_one_round_trip(conn, [_LOCK_PG, both], params):
        if row[0] is None:
            counts = row[-1]
        else:
            rows.append(row)
    state = db_providers.capacity_state_of(rows)
    return state, _locked(conn, params, counts, counted_types, servers_type)


def _beside_capacity(usage):
    """The providers' capacity rows, then a row of NULLs but for the
    usage (a round trip returns one result)."""
    return 'SELECT *, NULL::json FROM (%s) AS capacity UNION ALL ' \
        'SELECT %s(%s)' % (db_providers.CAPACITY_STATE_PG,
                           'NULL, ' * db_providers.CAPACITY_STATE_COLUMNS,
                           usage)


# By the usage read they stand for; prepared as those are.
_CAPACITY_AND_USAGE = {
    _LOCKED_USAGE_ONE_PG: prepared.Statement(
        'allocworker_capacity_and_project_usage_one',
        _beside_capacity(_LOCKED_USAGE_ONE_PG_TEXT)),
    _LOCKED_USAGE_PG: prepared.Statement(
        'allocworker_capacity_and_project_usage',
        _beside_capacity(_LOCKED_USAGE_PG_TEXT)),
    _LOCKED_USAGE_PG_TEXT: _beside_capacity(_LOCKED_USAGE_PG_TEXT)}


def _usage_read(params):
    """The statement that reads the usage of ``params``' projects (for
    one project, its own: bound as ``project``)."""
    # (The lock and the read bind the projects under one name: psycopg2
    # adapts a list once per name, 0.035 ms for 63 projects.)
    projects = params['projects']
    if len(projects) == 1:
        params['project'] = projects[0]
        return _LOCKED_USAGE_ONE_PG
    if len(projects) <= PREPARED_UP_TO:
        return _LOCKED_USAGE_PG
    return _LOCKED_USAGE_PG_TEXT


def _locked(conn, params, counts, counted_types, servers_type):
    """``locked_usage`` of what its PostgreSQL statement read."""
    projects = params['projects']
    if 'project' in params:
        counts = {projects[0]: counts} if counts else None
    found = _Found(projects, counted_types, servers_type)
    for project_id, named in (counts or {}).items():
        locked = named.pop(_LOCK_MARK, None)
        if locked is not None:
            found.locked[project_id] = locked
        found.shards(project_id, named)
    missing = [p for p in projects if p not in found.locked]
    if missing:
        lock_projects(conn, missing)
        again = _read(conn, missing, counted_types, servers_type)
        found.usage.update(again.usage)
        found.locked.update(again.locked)
    project_counters.remember(conn, found.locked)
    return found.named(conn)
