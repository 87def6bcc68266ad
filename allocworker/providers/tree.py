"""Renaming a provider and moving it in the provider trees (Placement's
``PUT /resource_providers/{uuid}``; re-parenting from microversion 1.37),
and moving a whole tree to another partition (``set_partition``,
``allocworker-manage provider set-partition``).

Neither a rename nor a move changes the provider's generation, as in
Placement: generations guard inventories and capacity, and clients such
as Nova's report client keep them cached across renames.

A move changes the root of the provider and everything below it. Group
policies are judged on roots, so a subtree that holds allocations is not
moved (409 ``provider.in_use``): free or migrate them first. The subtree's
rows stay locked while it moves, so no allocation lands meanwhile. A tree
lies in one partition: a subtree moved under another tree takes its
partition, and changing a tree's partition is held to the same rule.
"""

from oslo_db import exception as db_exc

from allocworker import bindings
from allocworker import codes
from allocworker.db import api as db
from allocworker.db.catalog import partitions as db_partitions
from allocworker.db.catalog import providers as db_providers
from allocworker import items
from allocworker import partitions
from allocworker import policy
from allocworker.providers import rules as providers
from allocworker import retry
from allocworker import validation

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
    retry.write(_write, uuid, name, parent_uuid, bindings.seen(context))
    with db.reader() as conn:
        return providers.provider_item(db_providers.get(conn, uuid))


def _write(uuid, name, parent_uuid, view):
    """``view``: the partitions a bound caller sees and writes (None:
    every one); the provider and a new parent must lie in them."""
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
            parent_id = _parent_id(conn, parent_uuid, below)
        # One lock statement, in id order, like every other writer.
        locked = db_providers.lock(conn, below | (
            {parent_id} if parent_id is not None else set()))
        if provider_id not in locked or (parent_id is not None and
                                         parent_id not in locked):
            raise db.ConcurrentUpdate(uuid)
        bindings.check_writable(view, locked[provider_id].partition,
                                'provider %s' % uuid)
        if parent_id is not None:
            bindings.check_writable(view, locked[parent_id].partition,
                                    'parent_uuid %s' % parent_uuid)
        # Renamed first, in the partition it lies in now, so that a move
        # to another partition judges the names it will have there.
        if name != current.name:
            try:
                db_providers.rename(conn, provider_id, name)
            except db_exc.DBDuplicateEntry:
                raise codes.Fault(codes.PROVIDER_EXISTS,
                                  'a provider named %r already exists in '
                                  'partition %s'
                                  % (name, locked[provider_id].partition))
        if moving:
            _move(conn, uuid, provider_id, parent_id, locked, below)


def _parent_id(conn, parent_uuid, below):
    """The new parent's id: it exists, and is not in the moving subtree
    ``below``."""
    parent_id = db_providers.ids_by_uuid(conn, [parent_uuid]).get(
        parent_uuid)
    if parent_id is None:
        raise codes.Fault(codes.PROVIDER_NOT_IN_BODY,
                          'parent_uuid %s: no such provider' % parent_uuid)
    if parent_id in below:
        raise validation.invalid(
            'parent_uuid %s is the provider itself or below it; a tree '
            'cannot loop' % parent_uuid)
    return parent_id


def _move(conn, uuid, provider_id, parent_id, locked, below):
    """Hang the locked subtree ``below`` under ``parent_id`` (None: make
    it a tree of its own), in the new tree's partition."""
    if db_providers.subtree(conn, provider_id) != below:
        raise db.ConcurrentUpdate(uuid)  # a child arrived
    if db_providers.has_allocations(conn, below):
        raise codes.Fault(
            codes.PROVIDER_IN_USE,
            'provider %s or a provider below it holds allocations, so it '
            'cannot move to another tree' % uuid)
    partition = locked[provider_id].partition
    if parent_id is not None:
        partition = locked[parent_id].partition
    if partition != locked[provider_id].partition:
        _refuse_taken_names(conn, below, partition,
                            'provider %s cannot move under a tree of '
                            'partition %s' % (uuid, partition))
    try:
        db_providers.move(conn, provider_id, parent_id,
                          parent_id and locked[parent_id].root_id, below,
                          partition)
    except db_exc.DBDuplicateEntry:  # a name taken since it was looked at
        raise db.ConcurrentUpdate(uuid)


def _refuse_taken_names(conn, provider_ids, partition, what):
    """409 ``provider.exists`` when a provider of ``partition`` has the
    name of one of ``provider_ids`` (names are unique per partition)."""
    taken = db_partitions.names_taken(conn, provider_ids, partition)
    if taken:
        raise codes.Fault(codes.PROVIDER_EXISTS,
                          '%s: it already has providers named %s'
                          % (what, ', '.join(repr(n) for n in taken)))


def set_partition(context, uuid, partition):
    """Put the tree of the root provider ``uuid`` in ``partition``, only
    while the tree holds no allocations (design §3, "Partitions"). One
    item, as create's (the root's). Admin only."""
    return items.one(context, {'uuid': items.echo(uuid)}, _set_partition,
                     context, uuid, partition)


def _set_partition(context, uuid, partition):
    uuid = validation.uuid(uuid, 'uuid')
    partition = partitions.parse(partition, 'partition')
    policy.check(context, 'set_provider_partition', 'provider %s' % uuid)
    retry.write(_repartition, uuid, partition)
    with db.reader() as conn:
        return providers.provider_item(db_providers.get(conn, uuid))


def _repartition(uuid, partition):
    with db.writer() as conn:
        current = db_providers.get(conn, uuid)
        if current is None:
            raise codes.Fault(codes.PROVIDER_NOT_FOUND,
                              'provider %s does not exist' % uuid)
        if current.root_uuid != uuid:
            raise validation.invalid(
                'uuid %s is not a root provider (its root is %s): a tree '
                'lies in one partition, set on its root' % (
                    uuid, current.root_uuid))
        members = db_partitions.tree(conn, current.id)
        locked = db_providers.lock(conn, members)
        # Locked as a writer placing allocations locks them, so none
        # lands while the tree moves; and a child created or a subtree
        # moved meanwhile is seen here (its parent's lock was ours).
        if set(locked) != members or \
                db_partitions.tree(conn, current.id) != members:
            raise db.ConcurrentUpdate(uuid)
        if all(row.partition == partition for row in locked.values()):
            return
        if db_providers.has_allocations(conn, members):
            raise codes.Fault(
                codes.PROVIDER_IN_USE,
                'the tree of provider %s holds allocations, so it cannot '
                'move from partition %s to %s' % (
                    uuid, locked[current.id].partition, partition))
        _refuse_taken_names(conn, members, partition,
                            'the tree of provider %s cannot move to '
                            'partition %s' % (uuid, partition))
        try:
            db_partitions.move(conn, members, partition)
        except db_exc.DBDuplicateEntry:  # taken since it was looked at
            raise db.ConcurrentUpdate(uuid)
