"""Queries on the aggregates providers belong to."""

import sqlalchemy as sa

from allocworker.db import schema

_pa = schema.provider_aggregates


def of_providers(conn, provider_ids=None):
    """{provider_id: {aggregate uuid}} (every provider when ids is None)."""
    query = sa.select(_pa.c.provider_id, _pa.c.aggregate_uuid)
    if provider_ids is not None:
        if not provider_ids:
            return {}
        query = query.where(_pa.c.provider_id.in_(sorted(provider_ids)))
    found = {}
    for provider_id, aggregate in conn.execute(query):
        found.setdefault(provider_id, set()).add(aggregate)
    return found


def replace(conn, provider_id, aggregates):
    conn.execute(sa.delete(_pa).where(_pa.c.provider_id == provider_id))
    if aggregates:
        conn.execute(sa.insert(_pa), [
            {'provider_id': provider_id, 'aggregate_uuid': a}
            for a in sorted(aggregates)])
