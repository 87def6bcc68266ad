"""Renaming a provider and moving it in the provider trees (Placement's
``PUT /resource_providers/{uuid}``; re-parenting from microversion 1.37).

Neither a rename nor a move changes the provider's generation, as in
Placement: generations guard inventories and capacity, and clients such
as Nova's report client keep them cached across renames.

A move changes the root of the provider and everything below it. Group
policies are judged on roots, so a subtree that holds allocations is not
moved (409 ``provider.in_use``): free or migrate them first. The subtree's
rows stay locked while it moves, so no allocation lands meanwhile.
"""

from oslo_db import exception as db_exc

from allocworker import codes
from allocworker import items
from allocworker import policy
from allocworker.providers import rules as providers
from allocworker import retry
from allocworker import validation
from allocworker.db import api as db
from allocworker.db import providers as db_providers

KEEP = object()


def update_provider(context, uuid, name, parent_uuid=KEEP):
    """Rename the provider and, unless ``parent_uuid`` is KEEP, hang it
    under that parent (None makes it a root). One item, as create's."""
    return items.one(context, {'uuid': items.echo(uuid)}, _update, context,
                     uuid, name, parent_uuid)


def _update(context, uuid, name, parent_uuid):
    uuid = validation.uuid(uuid, 'uuid')
    name = validation.string(name, 'name', max_length=200)
    if parent_uuid is not KEEP:
        parent_uuid = validation.optional_uuid(parent_uuid, 'parent_uuid')
    policy.check(context, 'update_provider', 'provider %s' % uuid)
    retry.write(_write, uuid, name, parent_uuid)
    with db.reader() as conn:
        return providers.provider_item(db_providers.get(conn, uuid))


def _write(uuid, name, parent_uuid):
    with db.writer() as conn:
        current = db_providers.get(conn, uuid)
        if current is None:
            raise codes.Fault(codes.PROVIDER_NOT_FOUND,
                              'provider %s does not exist' % uuid)
        provider_id = current.id
        moving = parent_uuid is not KEEP and \
            parent_uuid != current.parent_uuid
        below = db_providers.subtree(conn, provider_id) if moving else \
            {provider_id}
        parent_id = None
        if moving and parent_uuid is not None:
            parent_id = db_providers.ids_by_uuid(
                conn, [parent_uuid]).get(parent_uuid)
            if parent_id is None:
                raise codes.Fault(codes.PROVIDER_NOT_IN_BODY,
                                  'parent_uuid %s: no such provider'
                                  % parent_uuid)
            if parent_id in below:
                raise validation.invalid(
                    'parent_uuid %s is the provider itself or below it; '
                    'a tree cannot loop' % parent_uuid)
        # One lock statement, in id order, like every other writer.
        locked = db_providers.lock(conn, below | (
            {parent_id} if parent_id is not None else set()))
        if provider_id not in locked or (parent_id is not None and
                                         parent_id not in locked):
            raise db.ConcurrentUpdate(uuid)
        if moving:
            if db_providers.subtree(conn, provider_id) != below:
                raise db.ConcurrentUpdate(uuid)  # a child arrived
            if db_providers.has_allocations(conn, below):
                raise codes.Fault(
                    codes.PROVIDER_IN_USE,
                    'provider %s or a provider below it holds allocations, '
                    'so it cannot move to another tree' % uuid)
            db_providers.move(conn, provider_id, parent_id,
                              parent_id and locked[parent_id].root_id, below)
        if name != current.name:
            try:
                db_providers.rename(conn, provider_id, name)
            except db_exc.DBDuplicateEntry:
                raise codes.Fault(codes.PROVIDER_EXISTS,
                                  'a provider named %r already exists'
                                  % name)
