"""What each project uses, kept in two places that always add up.

A project's counts (per consumer type and class, and its consumers per
type) are moved by every write of allocations in its own transaction,
whatever the limits driver: they must be right the moment an operator
turns limits on. A count is the sum of

- its **shard rows** (``project_usages``, ``project_consumers``), moved
  by writers that do not hold the project's lock (limits off, exempt
  writes, deletes, a consumer leaving the project): each count is split
  over ``SHARDS`` rows so that two such writers meet one time in
  ``SHARDS`` (a counter row stays locked from a writer's upsert to its
  COMMIT);
- the **lock row's counts** (``project_locks.counts``, one JSON object
  per project), moved by the writer holding the project's lock, which
  read them under that lock (``db.quota.locked_usage``) and writes them
  back whole: one row per project where the shards would take one per
  type and class, and no other writer touches it.

Which of the two a move goes to is only a matter of cost: the sum is the
same. The counts a transaction read under its locks are kept for the
transaction (savepoint) that read them; a write in any other scope goes
to the shards (``split``).
"""

import json
import random

import sqlalchemy as sa
from sqlalchemy.dialects import mysql as mysql_dml
from sqlalchemy.dialects import postgresql as postgresql_dml
from sqlalchemy.dialects import sqlite as sqlite_dml

from allocworker.db import api
from allocworker.db import schema

_locks = schema.project_locks
_pu = schema.project_usages
_pc = schema.project_consumers

# Rows each shard count is split over: a read sums SHARDS times the rows.
SHARDS = 4

# In a lock row's counts, {consumer type: {CONSUMERS: consumers,
# str(class id): used}} (types as stored: '' for none).
CONSUMERS = ''


def decode(text):
    return json.loads(text) if text else {}


# (One encoder: ``json.dumps`` with separators makes one per call, which
# costs more than encoding a project's counts.)
_encode = json.JSONEncoder(separators=(',', ':')).encode


def class_ids(all_counts, counted_types):
    """The class ids (as in the JSON: strings) that decoded lock row
    ``all_counts`` hold for ``counted_types``."""
    found = set()
    for counts in all_counts:
        for kind in counted_types:
            found.update(counts.get(kind, ()))
    found.discard(CONSUMERS)
    return found


def add_counted(usage, counts, counted_types, servers_type, resources,
                servers):
    """Add a lock row's decoded ``counts`` to ``usage`` {resource:
    used}: each class over ``counted_types`` under ``resources`` {class
    id as in the JSON: resource name} (a class missing there is
    skipped), the consumers of ``servers_type`` under ``servers``."""
    for kind in counted_types:
        for key, amount in counts.get(kind, {}).items():
            resource = resources.get(key)
            if resource is not None and amount:
                usage[resource] = usage.get(resource, 0) + amount
    consumers = counts.get(servers_type, {}).get(CONSUMERS)
    if consumers:
        usage[servers] = usage.get(servers, 0) + consumers


def _scope(conn):
    return conn.get_nested_transaction() or conn.get_transaction()


def remember(conn, counts):
    """Keep {project_id: decoded counts}, read under the projects' locks,
    for writes in the same transaction or savepoint (``split``)."""
    kept = conn.info.get('allocworker_locked_counts')
    scope = _scope(conn)
    if kept is None or kept[0] is not scope:
        kept = conn.info['allocworker_locked_counts'] = (scope, {})
    kept[1].update(counts)


def _remembered(conn):
    kept = conn.info.get('allocworker_locked_counts')
    if kept is None or kept[0] is not _scope(conn) \
            or not kept[0].is_active:
        return {}
    return kept[1]


def split(conn, used, consumers):
    """(used, consumers, lock rows) of a write's moves ({(project_id,
    type, class_id): delta}, {(project_id, type): delta}): the moves of
    projects whose counts this scope read under their locks applied to
    those counts, as [(project_id, counts JSON)] in project order; the
    rest, for the shards."""
    held = _remembered(conn)
    if not held:
        return used, consumers, []
    moved = set()
    rest_used, rest_consumers = {}, {}
    keys = {}
    for (project, kind, class_id), delta in used.items():
        if project in held:
            key = keys.get(class_id)
            if key is None:
                key = keys[class_id] = str(class_id)
            _move(held[project], kind, key, delta)
            moved.add(project)
        else:
            rest_used[(project, kind, class_id)] = delta
    for (project, kind), delta in consumers.items():
        if project in held:
            _move(held[project], kind, CONSUMERS, delta)
            moved.add(project)
        else:
            rest_consumers[(project, kind)] = delta
    return (rest_used, rest_consumers,
            [(p, _encode(held[p])) for p in sorted(moved)])


def _move(counts, kind, key, delta):
    of_type = counts.setdefault(kind, {})
    amount = of_type.get(key, 0) + delta
    if amount:
        of_type[key] = amount
    else:
        of_type.pop(key, None)
        if not of_type:
            del counts[kind]


_SET_COUNTS = (sa.update(_locks)
               .where(_locks.c.project_id == sa.bindparam('project'))
               .values(counts=sa.bindparam('counts')))


def set_counts(conn, rows):
    """Write ``split``'s lock rows (the writer holds their locks)."""
    if rows:
        conn.execute(_SET_COUNTS, [{'project': p, 'counts': c}
                                   for p, c in rows])


def forget_class(conn, class_id):
    """Drop a class that is being deleted from the counts: its shard rows
    and its entries in the lock rows (nothing holds the class any more,
    so each count's parts add up to zero, and would not once one part
    went away without the other)."""
    conn.execute(sa.delete(_pu).where(_pu.c.resource_class_id == class_id))
    key = str(class_id)
    changed = []
    for project, text in conn.execute(
            sa.select(_locks.c.project_id, _locks.c.counts)
            .where(_locks.c.counts.like('%%"%s":%%' % key))):
        counts = decode(text)
        kinds = [kind for kind, of_type in counts.items() if key in of_type]
        for kind in kinds:
            _move(counts, kind, key, -counts[kind][key])
        if kinds:
            changed.append((project, _encode(counts)))
    set_counts(conn, changed)


def shard(conn):
    """The shard rows ``conn``'s transaction moves: all of them on one,
    drawn at its first write. A transaction of several writes (a shared
    claim transaction) that drew for each would hold several rows of a
    project, taken in no order, and deadlock with another such."""
    return api.per_transaction(conn, 'shard',
                               lambda: random.randrange(SHARDS))


def add(conn, used, consumers, shard=0):
    """Move the shard rows by ``used`` {(project_id, consumer_type,
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


_c = schema.consumers
_alloc = schema.allocations
_TEXT_NULL = sa.cast(sa.null(), sa.Text)
_INT_NULL = sa.cast(sa.null(), sa.Integer)
_HELD, _SHARDS, _LOCKED = 0, 1, 2


def _summed(kind, project, consumer_type, class_id, value):
    query = sa.select(sa.literal(kind), project, consumer_type,
                      class_id if class_id is not None else _INT_NULL,
                      # SUM is a decimal on some backends.
                      sa.cast(value, sa.BigInteger), _TEXT_NULL)
    keys = [project, consumer_type] + (
        [class_id] if class_id is not None else [])
    return query.group_by(*keys)


def _books_and_counts():
    """Every count as the books hold it and as the counters do, in one
    statement (one snapshot, in which every committed write moved its
    allocations and its counts alike): rows of (source, project, type,
    class id or NULL for consumers, value, lock row counts)."""
    return sa.union_all(
        _summed(_HELD, _c.c.project_id, _c.c.consumer_type,
                _alloc.c.resource_class_id, sa.func.sum(_alloc.c.used))
        .join(_alloc, _alloc.c.consumer_id == _c.c.id),
        _summed(_HELD, _c.c.project_id, _c.c.consumer_type, None,
                sa.func.count()),
        _summed(_SHARDS, _pu.c.project_id, _pu.c.consumer_type,
                _pu.c.resource_class_id, sa.func.sum(_pu.c.used)),
        _summed(_SHARDS, _pc.c.project_id, _pc.c.consumer_type, None,
                sa.func.sum(_pc.c.consumers)),
        sa.select(sa.literal(_LOCKED), _locks.c.project_id, _TEXT_NULL,
                  _INT_NULL, sa.cast(sa.null(), sa.BigInteger),
                  _locks.c.counts)
        .where(_locks.c.counts.is_not(None)))


def counters_off(conn):
    """(usage rows, consumer rows) whose count (shard rows plus lock row)
    differs from what the consumers and their allocations hold: tuples
    of the key, the counted value and the held one."""
    held, count = {}, {}
    for source, project, kind, class_id, value, counts in conn.execute(
            _books_and_counts()):
        if source == _LOCKED:
            for kind, of_type in decode(counts).items():
                for key, amount in of_type.items():
                    at = ((project, kind) if key == CONSUMERS
                          else (project, kind, int(key)))
                    count[at] = count.get(at, 0) + amount
            continue
        at = (project, kind) if class_id is None else (
            project, kind, class_id)
        into = held if source == _HELD else count
        into[at] = into.get(at, 0) + int(value)
    off = sorted(at + (count.get(at, 0), held.get(at, 0))
                 for at in set(held) | set(count)
                 if count.get(at, 0) != held.get(at, 0))
    return ([row for row in off if len(row) == 5],
            [row for row in off if len(row) == 4])


def refresh(conn):
    """Correct every count that differs from the books; the number of
    counts corrected.

    Each difference is read in one statement and added to a shard row
    as a delta, the way writers without the lock move them, so a writer
    that commits meanwhile keeps its own move: safe while this release's
    workers write, not while a worker of a release that keeps no project
    counters still does (a rolling upgrade: run it after)."""
    usage, consumers = counters_off(conn)
    add(conn, {row[:3]: row[4] - row[3] for row in usage},
        {row[:2]: row[3] - row[2] for row in consumers})
    return len(usage) + len(consumers)
