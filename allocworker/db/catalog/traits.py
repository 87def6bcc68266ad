"""Queries on traits and on which providers carry them."""

import sqlalchemy as sa

from allocworker.db import api
from allocworker.db.catalog import facets
from allocworker.db import names as names_table
from allocworker.db import prepared
from allocworker.db import schema

_t = schema.traits
_pt = schema.provider_traits


def ids_by_name(conn, names):
    """{name: id} for those of ``names`` that exist."""
    if not names:
        return {}
    rows = conn.execute(sa.select(_t.c.name, _t.c.id)
                        .where(_t.c.name.in_(sorted(set(names)))))
    return dict(rows.all())


_standard = {}


def standard_id(conn, name):
    """The id of the standard trait ``name`` (None if it is missing),
    remembered per database once found: standard traits are made by
    ``db sync`` and cannot be deleted."""
    key = (api.database_key(conn), name)
    if key not in _standard:
        found = ids_by_name(conn, [name]).get(name)
        if found is None:
            return None
        _standard[key] = found
    return _standard[key]


def names(conn, starts_with=None, in_names=None, associated=None):
    """Trait names in name order, optionally filtered: by prefix, by a set
    of names, or by whether any provider carries them."""
    query = sa.select(_t.c.name).order_by(_t.c.name)
    if starts_with:
        query = query.where(_t.c.name.startswith(starts_with,
                                                 autoescape=True))
    if in_names is not None:
        query = query.where(_t.c.name.in_(sorted(in_names)))
    if associated is not None:
        used = sa.exists().where(_pt.c.trait_id == _t.c.id)
        query = query.where(used if associated else ~used)
    return [row.name for row in conn.execute(query)]


def create(conn, name):
    """Create a trait; False when it already existed."""
    return names_table.create(conn, _t, ids_by_name, name)


def ensure(conn, wanted):
    """Create those of ``wanted`` that do not exist yet."""
    return names_table.ensure(conn, _t, ids_by_name, wanted)


def in_use(conn, trait_id):
    query = sa.select(_pt.c.provider_id).where(
        _pt.c.trait_id == trait_id).limit(1)
    return conn.execute(query).first() is not None


def delete(conn, trait_id):
    conn.execute(sa.delete(_t).where(_t.c.id == trait_id))


def of_providers(conn, provider_ids=None):
    """{provider_id: {trait name}} (every provider when ids is None)."""
    return facets.by_provider(
        conn, sa.select(_pt.c.provider_id, _t.c.name).join(
            _t, _pt.c.trait_id == _t.c.id), provider_ids)


def replace(conn, provider_id, trait_ids):
    facets.replace(conn, _pt, 'trait_id', provider_id, trait_ids)


def carrying(conn, trait_id, provider_ids):
    """Those of ``provider_ids`` that carry the trait ``trait_id``."""
    if trait_id is None or not provider_ids:
        return set()
    rows = conn.execute(sa.select(_pt.c.provider_id).where(
        _pt.c.trait_id == trait_id,
        prepared.one_of(_pt.c.provider_id, provider_ids, sa.Integer,
                        conn.dialect.name)))
    return {row[0] for row in rows}
