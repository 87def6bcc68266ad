"""Queries on the aggregates providers belong to."""

import sqlalchemy as sa

from allocworker.db.catalog import facets
from allocworker.db.grouping import epoch as db_epoch
from allocworker.db import schema

_pa = schema.provider_aggregates


def of_providers(conn, provider_ids=None):
    """{provider_id: {aggregate uuid}} (every provider when ids is None)."""
    return facets.by_provider(
        conn, sa.select(_pa.c.provider_id, _pa.c.aggregate_uuid),
        provider_ids)


def replace(conn, provider_id, aggregates):
    """The provider's aggregates become ``aggregates``; the topology's
    epoch moves (its domains may have)."""
    facets.replace(conn, _pa, 'aggregate_uuid', provider_id, aggregates)
    db_epoch.moved(conn)
