"""What a request asks of a provider's traits and aggregates, as SQL.

A ``Filters`` names trait ids and aggregate uuids already resolved:
``required`` (trait ids, all needed), ``any_traits`` (sets of trait ids,
one of each), ``forbidden`` (trait ids), ``member_of`` (sets of
aggregate uuids, one of each), ``forbidden_aggregates`` (aggregate
uuids). The clauses below are ``EXISTS`` over ``provider_traits`` and
``provider_aggregates`` (each indexed by provider), correlated to the
provider column they are given; their lists are bound as one array on
PostgreSQL, so a statement that holds them can still be prepared
(``prepared.Core``).
"""

import collections

import sqlalchemy as sa

from allocworker.db import prepared
from allocworker.db import schema

_pt = schema.provider_traits
_pa = schema.provider_aggregates

Filters = collections.namedtuple('Filters', [
    'required', 'any_traits', 'forbidden', 'member_of',
    'forbidden_aggregates'])
NO_FILTERS = Filters((), (), (), (), ())


def hashable(filters):
    """``filters`` (a Filters, or None) as a value a dict can key on."""
    if filters is None:
        return None
    return Filters(*(tuple(tuple(sorted(v))
                           if isinstance(v, (list, set, frozenset, tuple))
                           else v for v in field) for field in filters))


def has_traits(column, trait_ids, dialect):
    """The provider in ``column`` carries one of ``trait_ids``."""
    return sa.exists().where(_pt.c.provider_id == column, prepared.one_of(
        _pt.c.trait_id, trait_ids, sa.Integer, dialect))


def _in_aggregates(column, aggregates, dialect):
    return sa.exists().where(_pa.c.provider_id == column, prepared.one_of(
        _pa.c.aggregate_uuid, aggregates, sa.String, dialect))


def trait_clauses(column, filters, dialect):
    """The provider in ``column`` carries the traits ``filters`` ask."""
    clauses = [has_traits(column, [t], dialect)
               for t in sorted(filters.required)]
    clauses += [has_traits(column, ids, dialect)
                for ids in filters.any_traits]
    if filters.forbidden:
        clauses.append(~has_traits(column, filters.forbidden, dialect))
    return clauses


def aggregate_clauses(column, filters, dialect):
    """The provider in ``column`` is in the aggregates ``filters`` ask."""
    clauses = [_in_aggregates(column, aggs, dialect)
               for aggs in filters.member_of]
    if filters.forbidden_aggregates:
        clauses.append(~_in_aggregates(column, filters.forbidden_aggregates,
                                       dialect))
    return clauses


def either(provider, root, filters, dialect):
    """Placement's rule for the unnumbered group: the provider or its
    anchor root is in the aggregates asked, and neither is in a forbidden
    one."""
    clauses = []
    asked = filters._replace(forbidden_aggregates=())
    if filters.member_of:
        clauses.append(sa.or_(
            sa.and_(*aggregate_clauses(provider, asked, dialect)),
            sa.and_(*aggregate_clauses(root, asked, dialect))))
    if filters.forbidden_aggregates:
        for column in (provider, root):
            clauses.append(~_in_aggregates(
                column, filters.forbidden_aggregates, dialect))
    return sa.and_(sa.true(), *clauses)
