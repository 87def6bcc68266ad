"""Sets of facts kept per provider (its traits, its aggregates): tables
of (provider_id, value) rows, read as sets and replaced whole."""

import sqlalchemy as sa


def by_provider(conn, query, provider_ids=None):
    """{provider_id: {value}} from ``query``, which selects (provider_id,
    value), for ``provider_ids`` (every provider: None)."""
    if provider_ids is not None:
        if not provider_ids:
            return {}
        query = query.where(query.selected_columns[0].in_(
            sorted(provider_ids)))
    found = {}
    for provider_id, value in conn.execute(query):
        found.setdefault(provider_id, set()).add(value)
    return found


def replace(conn, table, column, provider_id, values):
    """The provider's rows of ``table`` become one per value in ``column``."""
    conn.execute(sa.delete(table).where(table.c.provider_id == provider_id))
    if values:
        conn.execute(sa.insert(table), [
            {'provider_id': provider_id, column: v} for v in sorted(values)])
