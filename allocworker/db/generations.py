"""Where generations start, and the memory that keeps them from repeating.

Providers, consumers and groups count their own generation up by one on
every write, as Placement does. When one is deleted, its last generation
is retired under its uuid; a later object with the same uuid starts above
it, so a uuid never sees the same generation twice. The row under the uuid
``*`` is a floor for every uuid of that kind (databases upgraded from the
single counter of revisions 0001-0004 carry its last value there).
"""

import sqlalchemy as sa

from allocworker.db import schema

_r = schema.retired_generations

PROVIDER = 'provider'
CONSUMER = 'consumer'
GROUP = 'group'
FLOOR = '*'

# A consumer is created by a write of its allocations; Placement counts
# that write, so the first generation a caller sees is 1.
_FIRST = {PROVIDER: 0, CONSUMER: 1, GROUP: 0}


_RETIRED = sa.select(_r.c.uuid, _r.c.generation).where(
    _r.c.kind == sa.bindparam('kind'),
    _r.c.uuid.in_(sa.bindparam('uuids', expanding=True)))


def first(conn, kind, uuids):
    """{uuid: the generation a new object with that uuid starts at}."""
    if not uuids:
        return {}
    rows = conn.execute(_RETIRED, {'kind': kind,
                                   'uuids': sorted(set(uuids)) + [FLOOR]})
    retired = dict(rows.all())
    floor = retired.get(FLOOR, -1)
    return {u: max(_FIRST[kind], max(retired.get(u, -1), floor) + 1)
            for u in uuids}


def retire(conn, kind, generations):
    """Remember the last generation of deleted objects: {uuid: generation}."""
    if not generations:
        return
    conn.execute(sa.delete(_r).where(
        _r.c.kind == kind, _r.c.uuid.in_(sorted(generations))))
    conn.execute(sa.insert(_r), [
        {'kind': kind, 'uuid': u, 'generation': g}
        for u, g in sorted(generations.items())])


def take_write_lock(conn):
    """SQLite only: a write statement first, so the transaction holds the
    database's write lock before it reads anything and is serializable
    there (a deferred transaction that reads, then writes after another
    writer committed, fails instead of waiting)."""
    conn.execute(sa.delete(_r).where(sa.false()))
