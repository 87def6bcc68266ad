"""Queries that move providers between partitions (a whole tree, or a
subtree re-parented into another tree)."""

from oslo_utils import timeutils
import sqlalchemy as sa

from allocworker.db import schema

_p = schema.providers


def tree(conn, root_id):
    """Ids of every provider whose root is ``root_id``."""
    return {row[0] for row in conn.execute(
        sa.select(_p.c.id).where(_p.c.root_provider_id == root_id))}


def names_taken(conn, provider_ids, partition):
    """Sorted names of ``provider_ids`` that another provider has in
    ``partition``: what would collide if they moved there."""
    moving = sorted(provider_ids)
    theirs = sa.select(_p.c.name).where(_p.c.id.in_(moving))
    query = (sa.select(_p.c.name)
             .where(_p.c.partition == partition, _p.c.name.in_(theirs),
                    _p.c.id.not_in(moving))
             .order_by(_p.c.name))
    return [row[0] for row in conn.execute(query)]


def move(conn, provider_ids, partition):
    """Put ``provider_ids`` in ``partition``."""
    conn.execute(sa.update(_p).where(_p.c.id.in_(sorted(provider_ids)))
                 .values(partition=partition,
                         updated_at=timeutils.utcnow()))
