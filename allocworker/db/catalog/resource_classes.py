"""Queries on resource classes."""

import os_resource_classes
import sqlalchemy as sa

from allocworker.db import api
from allocworker.db.limits import project_counters
from allocworker.db import names as names_table
from allocworker.db import schema

_rc = schema.resource_classes


# Standard classes are created by db sync and never change or go away, so
# their ids and names are remembered per process (per database URL);
# custom classes are always read (a custom class may be renamed).
_standard = {}


def ids_by_name(conn, names):
    """{name: id} for those of ``names`` that exist."""
    return _looked_up(conn, names, _rc.c.name, _rc.c.id)


def names_by_id(conn, class_ids):
    """{id: name} for those of ``class_ids`` that exist."""
    return _looked_up(conn, class_ids, _rc.c.id, _rc.c.name)


def _looked_up(conn, keys, key_column, value_column):
    if not keys:
        return {}
    known = _standard.setdefault((api.database_key(conn), key_column.name),
                                 {})
    found = {k: known[k] for k in keys if k in known}
    missing = sorted(set(keys) - set(found))
    if missing:
        rows = conn.execute(sa.select(key_column, value_column, _rc.c.name)
                            .where(key_column.in_(missing)))
        for key, value, name in rows:
            found[key] = value
            if name in os_resource_classes.STANDARDS:
                known[key] = value
    return found


def names(conn):
    return [row.name for row in
            conn.execute(sa.select(_rc.c.name).order_by(_rc.c.name))]


def create(conn, name):
    """Create a class; False when it already existed."""
    return names_table.create(conn, _rc, ids_by_name, name)


def ensure(conn, wanted):
    """Create those of ``wanted`` that do not exist yet."""
    return names_table.ensure(conn, _rc, ids_by_name, wanted)


def in_use(conn, class_id):
    """Whether any inventory or allocation refers to the class."""
    for table in (schema.inventories, schema.allocations):
        query = sa.select(table.c.id).where(
            table.c.resource_class_id == class_id).limit(1)
        if conn.execute(query).first() is not None:
            return True
    return False


def delete(conn, class_id):
    # Counters of a class nothing is allocated from any more (zero).
    conn.execute(sa.delete(schema.usages)
                 .where(schema.usages.c.resource_class_id == class_id))
    project_counters.forget_class(conn, class_id)
    conn.execute(sa.delete(_rc).where(_rc.c.id == class_id))


def rename(conn, class_id, new_name):
    conn.execute(sa.update(_rc).where(_rc.c.id == class_id)
                 .values(name=new_name))
