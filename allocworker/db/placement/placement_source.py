"""Reads of a Placement 16 database (``placement-manage db sync`` at
alembic revision ``a082b8bb98d0``), the source of
``allocworker-manage placement import``. Placement's database is only
ever read: one REPEATABLE READ transaction per pass, so what is copied
is one consistent snapshot while Placement keeps serving.

Placement links providers, classes, projects, users and aggregates by
integer ids of its own; these queries resolve every one to the name or
uuid it stands for, so no Placement id ever reaches allocworker's books.
"""

import contextlib

import os_resource_classes
import sqlalchemy as sa

# The one schema this import reads: Placement 16.0.0's head revision.
PLACEMENT_16_REVISION = 'a082b8bb98d0'

_rp = sa.table('resource_providers', sa.column('id'), sa.column('uuid'),
               sa.column('name'), sa.column('generation'),
               sa.column('root_provider_id'), sa.column('parent_provider_id'),
               sa.column('created_at'), sa.column('updated_at'))
_inv = sa.table('inventories', sa.column('resource_provider_id'),
                sa.column('resource_class_id'), sa.column('total'),
                sa.column('reserved'), sa.column('min_unit'),
                sa.column('max_unit'), sa.column('step_size'),
                sa.column('allocation_ratio'))
_rc = sa.table('resource_classes', sa.column('id'), sa.column('name'))
_alloc = sa.table('allocations', sa.column('resource_provider_id'),
                  sa.column('consumer_id'), sa.column('resource_class_id'),
                  sa.column('used'))
_rpa = sa.table('resource_provider_aggregates',
                sa.column('resource_provider_id'), sa.column('aggregate_id'))
_agg = sa.table('placement_aggregates', sa.column('id'), sa.column('uuid'))
_t = sa.table('traits', sa.column('id'), sa.column('name'))
_rpt = sa.table('resource_provider_traits', sa.column('trait_id'),
                sa.column('resource_provider_id'))
_proj = sa.table('projects', sa.column('id'), sa.column('external_id'))
_user = sa.table('users', sa.column('id'), sa.column('external_id'))
_c = sa.table('consumers', sa.column('id'), sa.column('uuid'),
              sa.column('project_id'), sa.column('user_id'),
              sa.column('generation'), sa.column('consumer_type_id'),
              sa.column('created_at'), sa.column('updated_at'))
_ct = sa.table('consumer_types', sa.column('id'), sa.column('name'))
_version = sa.table('alembic_version', sa.column('version_num'))


class Unreachable(Exception):
    """The source database could not be reached or read."""


@contextlib.contextmanager
def snapshot(url):
    """A read-only connection to the Placement database at ``url``, in
    one REPEATABLE READ transaction (one snapshot), never committed."""
    try:
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    except Exception as exc:  # bad URL, missing driver
        raise Unreachable(_first_line(exc))
    try:
        try:
            conn = engine.connect()
        except sa.exc.SQLAlchemyError as exc:
            raise Unreachable(_first_line(exc.orig if getattr(
                exc, 'orig', None) else exc))
        with conn:
            if engine.dialect.name != 'sqlite':
                conn = conn.execution_options(
                    isolation_level='REPEATABLE READ')
            with conn.begin() as transaction:
                yield conn
                transaction.rollback()
    finally:
        engine.dispose()


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def revision(conn):
    """The source's alembic revision; None when it has no such table."""
    if not sa.inspect(conn).has_table('alembic_version'):
        return None
    return conn.execute(sa.select(_version.c.version_num)).scalar()


def counts(conn):
    """How many providers and consumers the source holds."""
    return {'providers': conn.execute(
                sa.select(sa.func.count()).select_from(_rp)).scalar(),
            'consumers': conn.execute(
                sa.select(sa.func.count()).select_from(_c)).scalar()}


def changed_consumers(conn, since):
    """How many consumers were stamped at or after ``since``."""
    return conn.execute(sa.select(sa.func.count()).select_from(_c).where(
        _changed_since(_c, since))).scalar()


def class_names(conn):
    """{Placement's class id: name}: custom classes from its table,
    standard ones from their position in os-resource-classes (Placement
    16 keeps them in the table too, at those positions)."""
    names = dict(enumerate(os_resource_classes.STANDARDS))
    names.update(conn.execute(sa.select(_rc.c.id, _rc.c.name)).all())
    return names


def trait_names(conn):
    return [row[0] for row in conn.execute(sa.select(_t.c.name))]


def _changed_since(table, since):
    return sa.func.coalesce(table.c.updated_at, table.c.created_at) >= since


def providers(conn, since=None):
    """Every provider (changed at or after ``since`` when given) with its
    parent's and root's uuids: (uuid, name, generation, parent_uuid,
    root_uuid, created_at, updated_at), in Placement's id order."""
    parent = _rp.alias('parent')
    root = _rp.alias('root')
    query = (sa.select(_rp.c.uuid, _rp.c.name, _rp.c.generation,
                       parent.c.uuid, root.c.uuid, _rp.c.created_at,
                       _rp.c.updated_at)
             .select_from(_rp)
             .outerjoin(parent, parent.c.id == _rp.c.parent_provider_id)
             .outerjoin(root, root.c.id == _rp.c.root_provider_id)
             .order_by(_rp.c.id))
    if since is not None:
        query = query.where(_changed_since(_rp, since))
    return conn.execute(query)


def provider_uuids(conn):
    return {row[0] for row in conn.execute(sa.select(_rp.c.uuid))}


def inventories(conn, provider_uuids=None):
    """(provider_uuid, class_id, total, reserved, min_unit, max_unit,
    step_size, allocation_ratio) of every provider, or of those named."""
    query = (sa.select(_rp.c.uuid, _inv.c.resource_class_id, _inv.c.total,
                       _inv.c.reserved, _inv.c.min_unit, _inv.c.max_unit,
                       _inv.c.step_size, _inv.c.allocation_ratio)
             .join(_rp, _rp.c.id == _inv.c.resource_provider_id))
    if provider_uuids is not None:
        query = query.where(_rp.c.uuid.in_(sorted(provider_uuids)))
    return conn.execute(query)


def provider_traits(conn):
    """(provider_uuid, trait name) of every provider."""
    return conn.execute(
        sa.select(_rp.c.uuid, _t.c.name).select_from(_rpt)
        .join(_rp, _rp.c.id == _rpt.c.resource_provider_id)
        .join(_t, _t.c.id == _rpt.c.trait_id))


def provider_aggregates(conn):
    """(provider_uuid, aggregate uuid) of every provider."""
    return conn.execute(
        sa.select(_rp.c.uuid, _agg.c.uuid).select_from(_rpa)
        .join(_rp, _rp.c.id == _rpa.c.resource_provider_id)
        .join(_agg, _agg.c.id == _rpa.c.aggregate_id))


def _consumer_query():
    # The consumers table alone: joined to projects and users, MariaDB
    # 10.11 drives the join from projects (the smaller table) and sorts
    # every consumer after the page's start in an internal temporary
    # table for each page, on disk in its tmpdir past tmp_table_size:
    # quadratic in the consumers, and an import that fails when anything
    # removes that file meanwhile (any mariadbd starting with the same
    # tmpdir deletes every #sql* file in it). By the primary key alone
    # each page is an index range read, on every backend.
    return sa.select(_c.c.id, _c.c.uuid, _c.c.generation, _c.c.project_id,
                     _c.c.user_id, _c.c.consumer_type_id, _c.c.created_at,
                     _c.c.updated_at)


# Names kept between pages, per kind, at most this many (then forgotten
# and read again as pages need them): one read per project in the usual
# cloud, memory bounded in any.
KNOWN_NAMES = 10000

_NAMED = (('project', _proj, _proj.c.external_id, 3),
          ('user', _user, _user.c.external_id, 4),
          ('type', _ct, _ct.c.name, 5))


def _named(conn, rows, known=None):
    """``rows`` of ``_consumer_query`` with Placement's project, user and
    consumer type ids replaced by their external ids and name (a missing
    project or user becomes None, which the rules refuse by name; an
    unknown type None, as Placement reads it). ``known``: {kind: {id:
    name}} kept by the caller between calls."""
    known = {} if known is None else known
    for key, table, column, at in _NAMED:
        names = known.setdefault(key, {})
        wanted = {row[at] for row in rows if row[at] is not None} - set(names)
        if len(names) + len(wanted) > KNOWN_NAMES:
            names.clear()
            wanted = {row[at] for row in rows if row[at] is not None}
        if wanted:
            names.update(dict.fromkeys(wanted))
            names.update(conn.execute(sa.select(table.c.id, column).where(
                table.c.id.in_(sorted(wanted)))).all())
    project, user, kind = (known[key] for key, *_r in _NAMED)
    return [(row[0], row[1], row[2], project.get(row[3]), user.get(row[4]),
             kind.get(row[5]), row[6], row[7]) for row in rows]


def consumer_pages(conn, page_size, since=None):
    """Consumers a page at a time, by Placement's id (memory stays one
    page whatever the size): lists of (id, uuid, generation, project,
    user, consumer type or None, created_at, updated_at)."""
    after = None
    known = {}
    while True:
        query = _consumer_query().order_by(_c.c.id).limit(page_size)
        if after is not None:
            query = query.where(_c.c.id > after)
        if since is not None:
            query = query.where(_changed_since(_c, since))
        page = conn.execute(query).all()
        if not page:
            return
        yield _named(conn, page, known)
        after = page[-1][0]


def consumer_uuid_pages(conn, page_size):
    """Every consumer's uuid, a page (list) at a time by Placement's id,
    from the primary key alone (as ``consumer_pages``)."""
    after = None
    while True:
        query = (sa.select(_c.c.id, _c.c.uuid).order_by(_c.c.id)
                 .limit(page_size))
        if after is not None:
            query = query.where(_c.c.id > after)
        page = conn.execute(query).all()
        if not page:
            return
        yield [row[1] for row in page]
        after = page[-1][0]


def consumers_named(conn, uuids):
    """The consumer rows (as ``consumer_pages``) of ``uuids``."""
    if not uuids:
        return []
    return _named(conn, conn.execute(_consumer_query().where(
        _c.c.uuid.in_(sorted(uuids)))).all())


def consumer_uuids(conn):
    return {row[0] for row in conn.execute(sa.select(_c.c.uuid))}


def allocations_of(conn, consumer_uuids):
    """(consumer_uuid, provider_uuid, class_id, used) of ``consumer_uuids``."""
    if not consumer_uuids:
        return []
    return conn.execute(
        sa.select(_alloc.c.consumer_id, _rp.c.uuid,
                  _alloc.c.resource_class_id, _alloc.c.used)
        .join(_rp, _rp.c.id == _alloc.c.resource_provider_id)
        .where(_alloc.c.consumer_id.in_(sorted(consumer_uuids)))).all()


def allocations_without_consumer(conn):
    """(consumer uuid, rows) of allocations no consumer record owns."""
    return conn.execute(
        sa.select(_alloc.c.consumer_id, sa.func.count())
        .select_from(_alloc)
        .outerjoin(_c, _c.c.uuid == _alloc.c.consumer_id)
        .where(_c.c.id.is_(None))
        .group_by(_alloc.c.consumer_id)).all()
