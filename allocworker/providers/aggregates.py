"""Rules for the aggregates a provider belongs to. Aggregates are only
uuids that group providers; a provider that carries the
MISC_SHARES_VIA_AGGREGATE trait shares its inventory with the providers of
its aggregates (allocation candidates use that). Setting them is a write
to the provider, under its generation."""

from allocworker import bindings
from allocworker.db.catalog import aggregates as db_aggregates
from allocworker.groups import topology
from allocworker import items
from allocworker import policy
from allocworker.providers import rules as providers
from allocworker import retry
from allocworker import validation


def get_provider_aggregates(context, uuid):
    return items.one(context, {'uuid': items.echo(uuid)},
                     providers.facet_item, context, uuid, 'aggregates',
                     db_aggregates.of_providers)


def set_provider_aggregates(context, provider_uuid, provider_generation,
                            aggregates):
    """Replace the provider's aggregates under its generation, and move
    it. ``provider_generation`` None is Placement's API before 1.19: the
    write neither compares nor moves the generation. A root put in two
    domains of a topology level is refused (409
    topology.ambiguous_domain) and nothing is written."""
    return items.one(context, {'uuid': items.echo(provider_uuid)}, _set,
                     context, provider_uuid, provider_generation,
                     aggregates)


def _set(context, uuid, provider_generation, aggregates):
    uuid = validation.uuid(uuid, 'uuid')
    if provider_generation is not None:
        validation.integer(provider_generation, 'provider_generation',
                           minimum=0, maximum=None)
    if not isinstance(aggregates, list):
        raise validation.invalid('aggregates must be a list of uuids')
    aggregates = sorted({validation.uuid(a, 'aggregates')
                         for a in aggregates})
    policy.check(context, 'set_provider_aggregates', 'provider %s' % uuid)
    generation = retry.write(
        providers.replace_facet, uuid, provider_generation,
        lambda conn, provider_id: _replace(conn, provider_id, aggregates),
        bindings.seen(context))
    return {'uuid': uuid, 'generation': generation,
            'aggregates': aggregates, 'status': 200}


def _replace(conn, provider_id, aggregates):
    db_aggregates.replace(conn, provider_id, aggregates)
    topology.refuse_ambiguous(conn, root_ids=[provider_id])
