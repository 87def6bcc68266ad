"""The room left per provider and class (``usages.free``), read in
order: what a claim's windows of roots are made from
(``scheduling/windows.py``). Each read follows the (class, free,
provider) index, so it costs a page, never the cloud."""

import collections
import time

import sqlalchemy as sa

from allocworker.db import schema

_p = schema.providers
_inv = schema.inventories
_u = schema.usages
_pt = schema.provider_traits


Room = collections.namedtuple('Room', ['free', 'provider_id', 'root_id'])


def roomiest(conn, class_id, amount, most_first, after=None, count=16):
    """Up to ``count`` providers with room for ``amount`` of ``class_id``
    (by the kept room left, ``usages.free``), as ``Room`` rows: the most
    room first (``most_first``) or the least, ties by provider id, after
    the ``(free, provider id)`` key ``after`` of an earlier page. Read
    along the (class, free, provider) index: the cost is the page's, not
    the cloud's."""
    query = (sa.select(_u.c.free, _u.c.provider_id, _p.c.root_provider_id)
             .join(_p, _p.c.id == _u.c.provider_id)
             .where(_u.c.resource_class_id == class_id, _u.c.free >= amount))
    if most_first:
        query = query.order_by(_u.c.free.desc(), _u.c.provider_id.desc())
    else:
        query = query.order_by(_u.c.free, _u.c.provider_id)
    if after is not None:
        free, provider = after
        if most_first:
            query = query.where(_u.c.free <= free, sa.or_(
                _u.c.free < free, _u.c.provider_id < provider))
        else:
            query = query.where(_u.c.free >= free, sa.or_(
                _u.c.free > free, _u.c.provider_id > provider))
    return [Room(*row) for row in conn.execute(query.limit(count))]


def shared_class_ids(conn, sharing_trait, class_ids):
    """Those of ``class_ids`` that a provider carrying ``sharing_trait``
    has inventory of."""
    if sharing_trait is None or not class_ids:
        return set()
    query = (sa.select(_inv.c.resource_class_id).distinct()
             .join(_pt, _pt.c.provider_id == _inv.c.provider_id)
             .where(_pt.c.trait_id == sharing_trait,
                    _inv.c.resource_class_id.in_(sorted(class_ids))))
    return {row[0] for row in conn.execute(query)}


def roomiest_from(conn, class_id, amount, start, count):
    """Up to ``count`` providers that share the most room left for
    ``class_id`` (at least ``amount``), as ``Room`` rows, in provider id
    order from the id ``start`` on, wrapping round to the lowest ids:
    one statement, along the same index as ``roomiest``."""
    top = (sa.select(sa.func.max(_u.c.free))
           .where(_u.c.resource_class_id == class_id, _u.c.free >= amount)
           .scalar_subquery())
    query = (sa.select(_u.c.free, _u.c.provider_id, _p.c.root_provider_id)
             .join(_p, _p.c.id == _u.c.provider_id)
             .where(_u.c.resource_class_id == class_id, _u.c.free == top))
    rows = [Room(*row) for row in conn.execute(
        query.where(_u.c.provider_id >= start)
        .order_by(_u.c.provider_id).limit(count))]
    if len(rows) < count:
        rows += [Room(*row) for row in conn.execute(
            query.where(_u.c.provider_id < start)
            .order_by(_u.c.provider_id).limit(count - len(rows)))]
    return rows


_highest = {}
HIGHEST_ID_SECONDS = 30.0


def highest_provider_id(conn):
    """The highest provider id, read again at most every
    ``HIGHEST_ID_SECONDS`` (it only bounds a random start)."""
    key = str(conn.engine.url)
    known = _highest.get(key)
    now = time.monotonic()
    if known is None or now - known[1] > HIGHEST_ID_SECONDS:
        known = _highest[key] = (
            conn.execute(sa.select(sa.func.max(_p.c.id))).scalar() or 0,
            now)
    return known[0]
