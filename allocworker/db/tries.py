"""A claim's try of one candidate: a savepoint, then the candidate's
providers locked unless another transaction holds them, judged and
written, or rolled back to the savepoint (on PostgreSQL that lets the
locks go; InnoDB keeps row locks taken after a savepoint until the
transaction ends).

On PostgreSQL (through psycopg2) the savepoint is not SQLAlchemy's: its
SAVEPOINT rides in the round trip of the lock statement, and a try that
succeeds never releases it (a savepoint left open commits with its
transaction, as a released one does, and ``ROLLBACK TO`` names the
latest). So a kept try costs the database two round trips fewer. An
undone try is rolled back and released in one round trip: a savepoint
only rolled back stays open as a fresh subtransaction, the next try's
nests inside it, and its lock would give it a transaction id; released,
a claim transaction keeps one subtransaction id per claim placed, at
most ``[scheduling] shared_claim_items`` (PostgreSQL caches 64 per
session before every snapshot costs more). Elsewhere a try is a
SQLAlchemy savepoint, begun and released as usual.
"""

import functools

import sqlalchemy as sa

from allocworker.db.catalog import providers
from allocworker.db import prepared
from allocworker.db import schema
from allocworker.db.search import rooms

_p = schema.providers
_SAVEPOINT = 'allocworker_try'


class Try(object):
    """One try in ``conn``'s transaction; ``undo`` or ``keep`` ends it."""

    def __init__(self, conn):
        self.conn = conn
        self._own = prepared.applies(conn.dialect)
        self._nested = None

    def begin(self):
        """The savepoint alone (a try whose plan locks its providers,
        waiting for them)."""
        if self._own:
            self.conn.exec_driver_sql('SAVEPOINT %s' % _SAVEPOINT)
        else:
            self._nested = self.conn.begin_nested()

    def lock_unless_taken(self, provider_ids, tree_of=None):
        """The savepoint, and ``provider_ids`` locked in id order,
        skipping rows another transaction holds locked (SKIP LOCKED):
        None (the try undone) unless every one of them is now locked by
        this transaction, else ({id: Locked}, as ``providers.lock``
        answers, and the units used in the tree of the root id
        ``tree_of`` when given, ``rooms.tree_used``). SQLite has one
        writer at a time: nothing is ever taken there.

        The tree's units are read by a statement of their own, after
        the one that locks: read in the locking statement they came from
        its snapshot, taken before the lock, so a writer that committed
        in that instant went unseen (a ``spread`` claim then doubled up
        on its host). The second statement locks the same rows again
        (instantly: they are this transaction's) and runs in the same
        round trip on PostgreSQL."""
        if not provider_ids:
            self.begin()
            return {}, None
        bound = {'ids': sorted(provider_ids)}
        dialect = self.conn.dialect.name
        if self._own:
            before = ('SAVEPOINT %s' % _SAVEPOINT,)
        else:
            self.begin()
            before = ()
        query = _lock_unless_taken_query(False, dialect)
        if tree_of is not None:
            bound['root'] = tree_of
            if dialect != 'sqlite':
                before += (query,)
            query = _lock_unless_taken_query(True, dialect)
        rows = query.execute(self.conn, bound, before=before).all()
        if len(rows) != len(set(provider_ids)):
            self.undo()
            return None
        width = 1 + len(providers.Locked._fields)
        locked = {row[0]: providers.Locked(*row[1:width]) for row in rows}
        return locked, (int(rows[0][width]) if tree_of is not None
                        else None)

    def undo(self):
        """Roll back to the savepoint: nothing the try did stays."""
        if self._own:
            self.conn.exec_driver_sql(
                'ROLLBACK TO SAVEPOINT %s; RELEASE SAVEPOINT %s'
                % (_SAVEPOINT, _SAVEPOINT))
        else:
            self._nested.rollback()

    def keep(self):
        """Keep what the try did, in the transaction."""
        if not self._own:
            self._nested.commit()


@functools.lru_cache(maxsize=8)
def _lock_unless_taken_query(with_tree, dialect):
    """Prepared on PostgreSQL: planning it cost 0.45-0.65 ms of the
    server's CPU per try, running it 0.06-0.11."""
    columns = [_p.c.id, *providers.LOCKED_COLUMNS]
    if with_tree:
        columns.append(rooms.tree_used(
            sa.bindparam('root', type_=sa.Integer)))
    query = (sa.select(*columns)
             .where(prepared.in_list(_p.c.id, 'ids', sa.Integer, dialect))
             .order_by(_p.c.id))
    if dialect != 'sqlite':
        query = query.with_for_update(skip_locked=True)
    return prepared.Core(query)
