"""Reshape: move inventories and the allocations against them in one
transaction (Placement's ``POST /reshaper``, 1.30), for an agent that
splits a provider into a tree, or folds one back.

Inventories are replaced first, under each provider's generation; then the
allocation items are judged against the new inventories and committed
atomically; last, no class that still has allocations may have lost its
inventory. Any failure writes nothing.
"""

from allocworker.allocations import writes as allocations
from allocworker import bindings
from allocworker.db import api as db
from allocworker.db.catalog import providers as db_providers
from allocworker.db.ledger import allocations as db_allocations
from allocworker import notifications
from allocworker import policy
from allocworker.providers import rules as providers
from allocworker import retry
from allocworker import validation


def reshape(context, inventories, items,
            new_type=allocations.DEFAULT_CONSUMER_TYPE):
    """``inventories``: {provider_uuid: {"provider_generation",
    "inventories"}}; ``items``: allocate items. Answers one item per
    allocate item; a bad inventory part is a whole-request fault."""
    policy.check(context, 'reshape', 'a reshape')
    validation.mapping(inventories, 'inventories')
    wanted = {}
    for raw_uuid, part in inventories.items():
        uuid = validation.uuid(raw_uuid, 'inventories key')
        validation.mapping(part, 'inventories.%s' % uuid)
        generation = validation.required(part, 'inventories.%s' % uuid,
                                         'provider_generation')
        validation.integer(generation, 'inventories.%s.provider_generation'
                           % uuid, minimum=0, maximum=None)
        wanted[uuid] = (generation, providers.parse_inventories(
            validation.required(part, 'inventories.%s' % uuid,
                                'inventories')))
    requests = allocations.prepared(context, items)
    refusal = allocations.refused(requests)
    if refusal:
        return allocations.answers(items, refusal)
    try:
        results, changes = retry.write(_reshape, context, wanted, requests,
                                       new_type)
    except allocations.BatchFailed as failed:
        return allocations.answers(items,
                                   allocations.blamed(failed, requests))
    notifications.emit(context, notifications.ALLOCATION_CHANGED, changes)
    return allocations.answers(items, results)


def _reshape(context, wanted, requests, new_type):
    # Generations move as Placement's reshaper moves them, since agents
    # carry them from one reshape to the next: once for the new
    # inventories (not when they are empty), once for the allocations
    # (providers placed on, and providers a consumer left entirely), and
    # once when the inventories are settled.
    view = bindings.seen(context)
    with db.writer() as conn:
        for uuid in sorted(wanted):
            generation, parsed = wanted[uuid]
            if parsed:
                providers.replace_inventories_in(
                    conn, uuid, generation, parsed, force=True,
                    reshaping=True, view=view)
            else:
                providers.lock_at_generation(conn, uuid, generation, view)
        left = _left_entirely(conn, requests)
        results, changes = (allocations.write_in(conn, context, requests,
                                                 new_type)
                            if requests else ({}, []))
        for uuid in left:
            providers.moved_generation(
                conn, uuid, db_providers.lock_by_uuid(conn, uuid))
        for uuid in sorted(wanted):
            providers.settle_inventories(conn, uuid, wanted[uuid][1])
        return results, changes


def _left_entirely(conn, requests):
    """Providers that consumers whose allocations become empty leave, and
    that no request places allocations on (those move anyway)."""
    emptied = [r.consumer_uuid for r in requests if not r.allocations]
    placed = {p for r in requests for p in r.allocations}
    held = db_allocations.describe(conn, emptied)
    return sorted({p for _consumer, allocs, _partitions in held.values()
                   for p in allocs}
                  - placed)
