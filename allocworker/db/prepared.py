"""PostgreSQL: hot statements prepared once per connection.

Planning a hot statement can cost the server more than running it: the
allocation write set (``writes_pg``) about 0.7 ms to plan against 0.35 ms
to run. So each connection PREPAREs such a statement once and runs its
generic plan (``tune_session``). A prepared statement outlives the
transaction that made it, even one rolled back. A generic plan does not
know how long the bound arrays are, so a prepared statement must leave
it no plan but the right one: the consumers' read
(``allocations.describe``) binds each consumer's allocations to it in a
subquery of their own, else it scanned every allocation.

A generic plan is fixed when it is made: one made while the tables were
nearly empty scans them whole, and PostgreSQL makes it again only when a
table's statistics change (autovacuum's ANALYZE, a minute apart at
best). Measured: 41,000 consumers in, a single allocate cost the server
8.6 ms instead of 2.0. Each connection prepares a statement again after
``REPLAN_SECONDS``, for one planning.
"""

import itertools
import re
import time

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

REPLAN_SECONDS = 10.0

# Every placeholder carries its type: ``%(name)s::type``.
_PLACEHOLDER = re.compile(r'%\((\w+)\)s::(\w+(?:\[\])?)')


def applies(dialect):
    """PostgreSQL through psycopg2, whose adaptation of Python lists to
    arrays and ``server_version`` these statements rely on."""
    return dialect.name == 'postgresql' and dialect.driver == 'psycopg2'


def tune_session(dbapi_connection):
    """On every new connection: prepared statements use their generic
    plan. PostgreSQL's default (``auto``) compares the generic plan's
    cost, estimated for arrays of unknown length, with custom plans made
    for the actual arrays, and here keeps planning afresh nearly every
    time. psycopg2 prepares nothing itself, so only our statements are
    concerned."""
    if dbapi_connection.server_version >= 120000:
        cursor = dbapi_connection.cursor()
        cursor.execute('SET plan_cache_mode = force_generic_plan')
        # A generic plan's cost is estimated for arrays of unknown length
        # and can pass jit_above_cost: JIT compiled a group's member read
        # on every run, 28 ms for a statement that runs in 1. Nothing
        # here is a long analytic query that compiling would pay for.
        cursor.execute('SET jit = off')
        cursor.close()
        # SET is undone if its transaction rolls back.
        dbapi_connection.commit()


class Statement(object):
    """One SQL text, PREPAREd under ``name`` on each connection that runs
    it, and prepared again every REPLAN_SECONDS there."""

    def __init__(self, name, text):
        types = {}

        def number(match):
            types.setdefault(match.group(1), match.group(2))
            return '$%d' % (list(types).index(match.group(1)) + 1)

        body = _PLACEHOLDER.sub(number, text)
        self.name = name
        self._prepare = 'PREPARE %s (%s) AS %s' % (
            name, ', '.join(types.values()), body)
        self._execute = 'EXECUTE %s (%s)' % (name, ', '.join(
            '%%(%s)s' % param for param in types))

    def execute(self, conn, params):
        """The result of running the statement with ``params`` on
        ``conn`` (a SQLAlchemy connection)."""
        self._prepare_on(conn)
        return conn.exec_driver_sql(self._execute, params)

    def _prepare_on(self, conn):
        # The pool's record of the connection remembers on which DBAPI
        # connection, and when, it was prepared: a reconnect brings a new
        # one.
        record = conn.connection
        dbapi_connection = record.dbapi_connection
        done = record.info.get(self.name)
        now = time.monotonic()
        if done and done[0] is dbapi_connection:
            if now - done[1] < REPLAN_SECONDS:
                return
            conn.exec_driver_sql('DEALLOCATE %s' % self.name)
        conn.exec_driver_sql(self._prepare)
        record.info[self.name] = (dbapi_connection, now)


def in_one_round_trip(conn, parts, params):
    """Run ``parts`` in order in one round trip, each a Statement (run
    prepared) or a plain SQL text (planned for its values); the result
    of the last. Each is a statement of its own, which at READ COMMITTED
    reads a snapshot of its own, taken when the one before it has
    finished: a part may wait for locks whose holders' commits the next
    part then sees."""
    texts = []
    for part in parts:
        if isinstance(part, Statement):
            part._prepare_on(conn)
            texts.append(part._execute)
        else:
            texts.append(part)
    return conn.exec_driver_sql(';\n'.join(texts), params)


_core_numbers = itertools.count(1)


class Core(object):
    """A SQLAlchemy Core statement, run as a Statement on PostgreSQL
    (through psycopg2) and as itself elsewhere. Its text is compiled at
    first use, each bound value cast to its bind's type. A list must be
    bound as one array (``in_list``): a statement that still expands an
    IN list (its text varies with the list's length) is not prepared,
    nor one made with ``prepare`` False (planned for its values)."""

    def __init__(self, statement, prepare=True):
        self.name = 'allocworker_core_%d' % next(_core_numbers)
        self.statement = statement
        self._prepared = None if prepare else False
        self._values = None

    def execute(self, conn, params, before=()):
        """The statement's result; ``before``: plain SQL texts without
        parameters, or other ``Core`` statements run with the same
        ``params``, run first (in the same round trip when every one is
        prepared)."""
        cores = [part for part in before + (self,) if isinstance(part, Core)]
        if applies(conn.dialect):
            for core in cores:
                if core._prepared is None:
                    core._compile(conn)
        if any(core._prepared is False for core in cores) or not applies(
                conn.dialect):
            for part in before:
                if isinstance(part, Core):
                    conn.execute(part.statement, params)
                else:
                    conn.exec_driver_sql(part)
            return conn.execute(self.statement, params)
        values = {}
        for core in cores:
            values.update(core._values)
        return in_one_round_trip(
            conn, [part._prepared if isinstance(part, Core) else part
                   for part in before + (self,)], dict(values, **params))

    def _compile(self, conn):
        compiled = self.statement.compile(dialect=conn.dialect)
        text = compiled.string
        if 'POSTCOMPILE' in text:
            self._prepared = False
        else:
            self._values = {}
            for bind, name in compiled.bind_names.items():
                kind = re.sub(r'\(.*?\)', '',
                              bind.type.compile(dialect=conn.dialect))
                text = re.sub(r'%%\(%s\)s(?!::)' % name,
                              '%%(%s)s::%s' % (name, kind), text)
                if bind.effective_value is not None:
                    self._values[name] = bind.effective_value
            self._prepared = Statement(self.name, text)


def in_list(column, name, type_, dialect):
    """``column`` is one of the list bound as ``name``: on PostgreSQL one
    array, unnested (for a ``Core`` statement: a generic plan of ``=
    ANY(array)`` started from the wrong table for some, 3.4 ms against
    0.1), an expanded IN list elsewhere (and where ``dialect`` is None:
    a statement planned for its list)."""
    if dialect == 'postgresql':
        return column.in_(sa.select(sa.func.unnest(sa.bindparam(
            name, type_=postgresql.ARRAY(type_)))))
    return column.in_(sa.bindparam(name, expanding=True))


def any_of(column, name, type_, dialect):
    """``column`` is one of the list bound as ``name``, in a statement
    planned for the list: on PostgreSQL one array bound (``= ANY``, what
    PostgreSQL makes of an IN list anyway), elsewhere an expanded IN
    list. Rendering an expanded list costs the client about 10 us a
    value: 1,800 of them were a tenth of a wide-trees candidate
    search's CPU."""
    if dialect == 'postgresql':
        return column == sa.any_(sa.bindparam(
            name, type_=postgresql.ARRAY(type_)))
    return column.in_(sa.bindparam(name, expanding=True))


def one_of(column, values, type_, dialect):
    """``any_of`` with the values themselves bound, for a statement built
    per call."""
    values = sorted(values)
    if dialect == 'postgresql':
        return column == sa.any_(sa.bindparam(
            None, values, type_=postgresql.ARRAY(type_)))
    return column.in_(values)
