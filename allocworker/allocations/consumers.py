"""Reading consumers and their allocations: by consumer, by provider, and
page by page. Every read is one statement, so one snapshot."""

from allocworker.allocations import group_commit
from allocworker import bindings
from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db.ledger import allocations as db_allocations
from allocworker import items as item_results
from allocworker import policy
from allocworker import validation


def get_allocations(context, consumer_uuids):
    validation.uuid_list(consumer_uuids, 'consumer_uuids',
                         CONF.worker.max_batch_items)
    wanted = item_results.each_uuid(consumer_uuids, 'consumer_uuids')
    valid = item_results.valid(wanted)
    found = _reads.submit(valid, len(valid)) if valid else {}
    view = bindings.seen(context)
    items = []
    for raw, uuid in zip(consumer_uuids, wanted):
        if isinstance(uuid, codes.Fault):
            items.append(uuid.item(
                consumer_uuid=raw if isinstance(raw, str) else None))
        elif uuid not in found or any(
                bindings.hides(view, p) for p in found[uuid][2]):
            # A consumer of a partition the caller is not bound to is
            # left out, as one that does not exist.
            items.append(codes.Fault(
                codes.CONSUMER_NOT_FOUND,
                'consumer %s holds no allocations' % uuid
            ).item(consumer_uuid=uuid))
        elif not policy.allowed(context, 'get_allocations',
                                found[uuid][0].project_id):
            items.append(policy.denied(
                context, 'get_allocations', 'consumer %s' % uuid
            ).item(consumer_uuid=uuid))
        else:
            items.append(consumer_item(*found[uuid]))
    return items


def _describe_together(wanted):
    """The consumers concurrent calls want, in one statement (one
    snapshot for all of them): the same {uuid: ...} for each call."""
    found = db.one_statement(db_allocations.describe,
                             {uuid for uuids in wanted for uuid in uuids})
    return [found] * len(wanted)


# Concurrent get_allocations calls of this process share one query.
_reads = group_commit.Combiner(_describe_together,
                               lambda: CONF.worker.max_batch_items)


def consumer_item(consumer, allocations, _partitions=()):
    return {'consumer_uuid': consumer.uuid, 'status': 200,
            'consumer_generation': consumer.generation,
            'project_id': consumer.project_id, 'user_id': consumer.user_id,
            'consumer_type': consumer.consumer_type,
            'allocations': {
                provider_uuid: {'resources': resources,
                                'generation': generation}
                for provider_uuid, (resources, generation)
                in allocations.items()}}


def list_allocations(context, provider_uuid):
    provider_uuid = validation.uuid(provider_uuid, 'provider_uuid')
    with db.stale_reader() as conn:   # a listing: may be a moment stale
        partition, held = db_allocations.on_provider(conn, provider_uuid)
    if partition is None or bindings.hides(bindings.seen(context),
                                           partition):
        raise codes.Fault(codes.PROVIDER_NOT_FOUND,
                          'provider %s does not exist' % provider_uuid)
    return [{'consumer_uuid': c.uuid, 'consumer_generation': c.generation,
             'project_id': c.project_id, 'user_id': c.user_id,
             'resources': resources, 'status': 200}
            for c, resources in held
            if policy.allowed(context, 'list_allocations', c.project_id)]


def list_consumers(context, project_id=None, limit=1000, marker=None):
    """One page of consumers in uuid order; pass the last item's
    consumer_uuid as ``marker`` for the next page."""
    if project_id is not None:
        validation.string(project_id, 'project_id')
    validation.integer(limit, 'limit', minimum=1,
                       maximum=CONF.worker.max_batch_items)
    marker = validation.optional_uuid(marker, 'marker')
    if not policy.sees_every_project(context, 'list_consumers'):
        # A caller who sees only its own project pages through only it.
        if project_id not in (None, context.project_id):
            return []
        project_id = context.project_id
    with db.stale_reader() as conn:   # a listing: may be a moment stale
        page = db_allocations.page(conn, project_id, limit, marker,
                                   bindings.seen(context))
    return [{'consumer_uuid': c.uuid, 'consumer_generation': c.generation,
             'project_id': c.project_id, 'user_id': c.user_id,
             'consumer_type': c.consumer_type, 'status': 200}
            for c in page
            if policy.allowed(context, 'list_consumers', c.project_id)]
