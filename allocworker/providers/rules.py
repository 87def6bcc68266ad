"""Rules for providers, inventories, resource classes and usages.

The service layer: the RPC manager, the CLI and the REST shim all call
these functions. Each returns a list of result items (dicts) or raises
``codes.Fault`` when the request fails as a whole.
"""

from oslo_db import exception as db_exc
import os_resource_classes

from allocworker import bindings
from allocworker import capacity
from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db.catalog import providers as db_providers
from allocworker.db.catalog import resource_classes as db_classes
from allocworker import items
from allocworker import partitions
from allocworker import policy
from allocworker import retry
from allocworker import validation


INVENTORY_FIELDS = ('total',) + tuple(capacity.DEFAULTS)


def provider_item(provider, **extra):
    item = {'uuid': provider.uuid, 'name': provider.name,
            'generation': provider.generation,
            'parent_uuid': provider.parent_uuid,
            'root_uuid': provider.root_uuid,
            'partition': provider.partition}
    item.update(extra)
    item['status'] = 200
    return item


def inventory_dict(inventory):
    return inventory._asdict()


# -- providers -----------------------------------------------------------

def _allowed_one(context, call, identity, fn, *args):
    """_one, after the caller's right to ``call`` is checked."""
    if not policy.allowed(context, call):
        return [policy.denied(context, call, 'providers').item(**identity)]
    return items.one(context, identity, fn, *args)


def create_provider(context, uuid, name, parent_uuid=None, partition=None):
    """One provider; ``partition`` (RPC 1.6) None: its parent's, or
    ``default`` for a root."""
    return _allowed_one(context, 'create_provider', {'uuid': items.echo(uuid)},
                        _create_provider, uuid, name, parent_uuid, partition,
                        bindings.seen(context), bindings.home(context))


def _create_provider(uuid, name, parent_uuid, partition, view, home):
    uuid = validation.uuid(uuid, 'uuid')
    name = validation.string(name, 'name', max_length=200)
    parent_uuid = validation.optional_uuid(parent_uuid, 'parent_uuid')
    partition = partitions.optional(partition, 'partition')
    if parent_uuid == uuid:
        raise validation.invalid('parent_uuid must not be the provider itself')
    retry.write(_insert_provider, uuid, name, parent_uuid, partition, view,
                home)
    with db.reader() as conn:
        return provider_item(db_providers.get(conn, uuid))


def _insert_provider(uuid, name, parent_uuid, partition, view, home):
    """``view``, ``home``: what a bound caller sees and where the roots it
    creates land (``bindings``); None for a caller that sees all."""
    with db.writer() as conn:
        parent = None
        if parent_uuid is not None:
            # Locking the parent keeps it from being deleted (or its tree
            # from changing partition) under us.
            parent = db_providers.lock_by_uuid(conn, parent_uuid)
            if parent is None:
                raise codes.Fault(codes.PROVIDER_NOT_IN_BODY,
                                  'parent_uuid %s: no such provider'
                                  % parent_uuid)
            bindings.check_writable(view, parent.partition,
                                    'parent_uuid %s' % parent_uuid)
            partition = partitions.of_child(partition, parent.partition,
                                            parent_uuid)
        partition = partition or home or partitions.DEFAULT
        bindings.check_writable(view, partition, 'partition %s' % partition)
        try:
            db_providers.create(
                conn, uuid, name, partition, parent_id=parent and parent.id,
                root_id=parent and parent.root_provider_id)
        except db_exc.DBDuplicateEntry:
            raise codes.Fault(codes.PROVIDER_EXISTS,
                              'a provider with uuid %s, or named %r in '
                              'partition %s, already exists'
                              % (uuid, name, partition))


def delete_provider(context, uuid):
    return _allowed_one(context, 'delete_provider', {'uuid': items.echo(uuid)},
                        _delete_provider, uuid, bindings.seen(context))


def _delete_provider(uuid, view):
    uuid = validation.uuid(uuid, 'uuid')
    retry.write(_remove_provider, uuid, view)
    return {'uuid': uuid, 'status': 200}


def _remove_provider(uuid, view):
    with db.writer() as conn:
        row = db_providers.lock_by_uuid(conn, uuid)
        if row is None:
            raise codes.Fault(codes.PROVIDER_NOT_FOUND,
                              'provider %s does not exist' % uuid)
        bindings.check_writable(view, row.partition, 'provider %s' % uuid)
        if db_providers.has_children(conn, row.id):
            raise codes.Fault(codes.PROVIDER_IN_USE,
                              'Unable to delete parent resource provider '
                              '%s: It has child resource providers.' % uuid)
        if db_providers.has_allocations(conn, {row.id}):
            raise codes.Fault(codes.PROVIDER_IN_USE,
                              'Unable to delete resource provider %s: '
                              'Resource provider has allocations.' % uuid)
        db_providers.delete(conn, row.id, uuid, row.generation)


def get_providers(context, uuids=None):
    """One item per provider; 404 items for unknown uuids.

    Without ``uuids`` it lists every provider.
    """
    if uuids is not None:
        uuids = validation.uuid_list(uuids, 'uuids',
                                     CONF.worker.max_batch_items)
    wanted = items.each_uuid(uuids, 'uuids') if uuids is not None \
        else None
    if not policy.allowed(context, 'get_providers'):
        return _denied_reads(context, 'get_providers', uuids, 'uuid')
    with db.reader() as conn:
        found = db_providers.describe(
            conn, None if wanted is None else
            items.valid(wanted))
    found = _seen(context, found)
    by_uuid = {provider.uuid: (provider, classes)
               for provider, classes in found}
    if wanted is None:
        return [described_item(p, c) for p, c in found]
    return [_lookup(by_uuid, raw, uuid, described_item)
            for raw, uuid in zip(uuids, wanted)]


def _seen(context, described):
    """What of ``described`` [(provider, classes)] ``context`` sees: a
    provider of a partition it is not bound to is not found."""
    view = bindings.seen(context)
    if view is None:
        return described
    return [(p, c) for p, c in described if p.partition in view]


def _denied_reads(context, call, uuids, key):
    """A denied listing is empty; denied lookups are 403 items."""
    if uuids is None:
        return []
    fault = policy.denied(context, call, 'providers')
    return [fault.item(**{key: items.echo(raw)}) for raw in uuids]


def described_item(provider, classes):
    return provider_item(provider, inventories={
        name: inventory_dict(inv) for name, (inv, _used) in classes.items()})


def _lookup(by_uuid, raw, uuid, build, key='uuid'):
    if isinstance(uuid, codes.Fault):
        return uuid.item(**{key: raw if isinstance(raw, str) else None})
    if uuid not in by_uuid:
        return codes.Fault(codes.PROVIDER_NOT_FOUND,
                           'provider %s does not exist' % uuid
                           ).item(**{key: uuid})
    return build(*by_uuid[uuid])


# -- inventories ---------------------------------------------------------

def parse_inventories(inventories):
    """{class: Inventory} with defaults filled in, or Fault 400."""
    validation.mapping(inventories, 'inventories')
    parsed = {}
    for name, fields in inventories.items():
        validation.resource_class(name, 'inventories key')
        where = 'inventories.%s' % name
        validation.mapping(fields, where)
        validation.only_keys(fields, where, INVENTORY_FIELDS)
        values = dict(capacity.DEFAULTS)
        values.update(fields)
        values['total'] = validation.required(fields, where, 'total')
        for field in ('total', 'min_unit', 'max_unit', 'step_size'):
            validation.integer(values[field], '%s.%s' % (where, field),
                               minimum=1)
        validation.integer(values['reserved'], where + '.reserved',
                           minimum=0)
        values['allocation_ratio'] = validation.positive_number(
            values['allocation_ratio'], where + '.allocation_ratio')
        if values['reserved'] > values['total']:
            raise validation.invalid('%s.reserved (%d) is greater than '
                                     'total (%d)'
                                     % (where, values['reserved'],
                                        values['total']))
        if values['min_unit'] > values['max_unit']:
            raise validation.invalid('%s.min_unit (%d) exceeds max_unit (%d)'
                                     % (where, values['min_unit'],
                                        values['max_unit']))
        parsed[name] = capacity.Inventory(**values)
    return parsed


def set_inventories(context, provider_uuid, provider_generation, inventories,
                    force=False):
    return _allowed_one(context, 'set_inventories',
                        {'uuid': items.echo(provider_uuid)}, _set_inventories,
                        provider_uuid, provider_generation, inventories,
                        force, bindings.seen(context))


def _set_inventories(provider_uuid, provider_generation, inventories, force,
                     view):
    provider_uuid = validation.uuid(provider_uuid, 'provider_uuid')
    validation.integer(provider_generation, 'provider_generation',
                       minimum=0, maximum=None)
    parsed = parse_inventories(inventories)
    validation.boolean(force, 'force')
    generation = retry.write(_replace_inventories, provider_uuid,
                             provider_generation, parsed, force, view)
    return {'uuid': provider_uuid, 'generation': generation,
            'inventories': {n: inventory_dict(i) for n, i in parsed.items()},
            'status': 200}


def _replace_inventories(provider_uuid, expected_generation, parsed, force,
                         view):
    with db.writer() as conn:
        return replace_inventories_in(conn, provider_uuid,
                                      expected_generation, parsed, force,
                                      view=view)


def replace_inventories_in(conn, provider_uuid, expected_generation, parsed,
                           force, reshaping=False, view=None):
    """Replace a provider's inventories inside ``conn``'s transaction; its
    new generation. ``reshaping`` defers the in-use rules to
    ``settle_inventories``, run once the allocations have moved too;
    ``view``: the partitions a bound caller sees."""
    row = lock_at_generation(conn, provider_uuid, expected_generation, view)
    class_ids = db_classes.ids_by_name(conn, parsed)
    for name in parsed:
        if name not in class_ids:
            raise codes.Fault(codes.RESOURCE_CLASS_NOT_FOUND,
                              'inventories: No such resource class %s'
                              % name)
    used = {name: amount for (_pid, name), amount in
            db_providers.usages(conn, [row.id]).items()}
    if not reshaping:
        check_inventory_change(provider_uuid, parsed, used, force)
    _store_inventories(conn, row.id, parsed, class_ids, used)
    return moved_generation(conn, provider_uuid, row)


def settle_inventories(conn, provider_uuid, parsed):
    """After a reshape moved allocations: no class in use may have lost
    its inventory, and over-capacity is marked where it now is. A write
    of its own, so it moves the generation; the new one."""
    row = db_providers.lock_by_uuid(conn, provider_uuid)
    used = {name: amount for (_pid, name), amount in
            db_providers.usages(conn, [row.id]).items()}
    check_inventory_change(provider_uuid, parsed, used, force=True)
    _store_inventories(conn, row.id, parsed,
                       db_classes.ids_by_name(conn, parsed), used)
    return moved_generation(conn, provider_uuid, row)


def _store_inventories(conn, provider_id, parsed, class_ids, used):
    forced = {class_ids[n] for n, inv in parsed.items()
              if not capacity.fits(inv, used.get(n, 0))}
    db_providers.replace_inventories(
        conn, provider_id, {class_ids[n]: inv for n, inv in parsed.items()},
        forced)


def lock_at_generation(conn, provider_uuid, expected_generation, view=None):
    """Lock the provider for a write under its generation (None: whatever
    it is) by a caller seeing ``view`` (None: every partition): its row,
    or the 404 / 403 / generation-conflict fault."""
    row = db_providers.lock_by_uuid(conn, provider_uuid)
    if row is None:
        raise codes.Fault(codes.PROVIDER_NOT_FOUND,
                          'provider %s does not exist' % provider_uuid,
                          uuid=provider_uuid)
    bindings.check_writable(view, row.partition,
                            'provider %s' % provider_uuid)
    if expected_generation is not None and \
            row.generation != expected_generation:
        raise codes.Fault(
            codes.PROVIDER_GENERATION_CONFLICT,
            'provider %s is at generation %d, not %d'
            % (provider_uuid, row.generation, expected_generation),
            uuid=provider_uuid, generation=row.generation)
    return row


def moved_generation(conn, provider_uuid, row):
    """Move the locked provider's generation up by one; the new one."""
    if not db_providers.bump_generation(conn, row.id, row.generation):
        raise db.ConcurrentUpdate(provider_uuid)
    return row.generation + 1


def replace_facet(uuid, expected_generation, write, view=None):
    """One transaction replacing a set of facts about a provider (its
    traits, its aggregates) under its generation: ``write(conn,
    provider_id)`` replaces them. The provider's new generation; with
    ``expected_generation`` None (aggregates before Placement's 1.19) it
    is neither compared nor moved. ``view``: as ``lock_at_generation``'s."""
    with db.writer() as conn:
        row = lock_at_generation(conn, uuid, expected_generation, view)
        write(conn, row.id)
        if expected_generation is None:
            return row.generation
        return moved_generation(conn, uuid, row)


def facet_item(context, uuid, key, read):
    """One provider's generation and one set of facts about it (its
    traits, its aggregates): ``read(conn, [provider_id])`` gives
    {provider_id: set}. The item, or the 404 fault."""
    uuid = validation.uuid(uuid, 'uuid')
    policy.check(context, 'get_providers', 'provider %s' % uuid)
    with db.reader() as conn:
        provider = db_providers.get(conn, uuid)
        if provider is None or bindings.hides(bindings.seen(context),
                                              provider.partition):
            raise codes.Fault(codes.PROVIDER_NOT_FOUND,
                              'provider %s does not exist' % uuid)
        found = read(conn, [provider.id])
    return {'uuid': uuid, 'generation': provider.generation,
            key: sorted(found.get(provider.id, ())), 'status': 200}


def check_inventory_change(provider_uuid, parsed, used, force):
    """Refuse to drop a class still in use, or (without force) to shrink
    capacity below what is allocated."""
    removed = sorted((n for n, amount in used.items()
                      if amount and n not in parsed), key=_class_order)
    if removed:
        raise codes.Fault(
            codes.INVENTORY_IN_USE,
            "inventories: Inventory for '%s' on resource provider '%s' in "
            "use: allocations hold it, so it cannot be removed"
            % (', '.join(removed), provider_uuid))
    for name, amount in sorted(used.items()):
        if amount and not force and not capacity.fits(parsed[name], amount):
            raise codes.Fault(
                codes.INVENTORY_IN_USE,
                'inventories.%s: capacity %g would be below the %d '
                'allocated on provider %s (pass force=True when the '
                'resource really shrank)'
                % (name, capacity.capacity(parsed[name]), amount,
                   provider_uuid))


def _class_order(name):
    """Standard classes in their canonical order, then custom ones."""
    standard = os_resource_classes.STANDARDS
    return ((0, standard.index(name), name) if name in standard
            else (1, 0, name))


# -- usages --------------------------------------------------------------

def get_usages(context, provider_uuids):
    provider_uuids = validation.uuid_list(provider_uuids, 'provider_uuids',
                                          CONF.worker.max_batch_items)
    wanted = items.each_uuid(provider_uuids, 'provider_uuids')
    if not policy.allowed(context, 'get_usages'):
        return _denied_reads(context, 'get_usages', provider_uuids,
                             'provider_uuid')
    with db.stale_reader() as conn:   # reporting: may be a moment stale
        found = db_providers.describe(
            conn, [u for u in wanted if not isinstance(u, codes.Fault)])
    by_uuid = {p.uuid: (p, c) for p, c in _seen(context, found)}
    return [_lookup(by_uuid, raw, uuid, _usage_item, key='provider_uuid')
            for raw, uuid in zip(provider_uuids, wanted)]


def _usage_item(provider, classes):
    return {'provider_uuid': provider.uuid, 'generation': provider.generation,
            'usages': {name: used for name, (_inv, used) in classes.items()},
            'status': 200}


def describe_usage(uuids=None):
    """Per provider and class: used and capacity (for operators' views)."""
    with db.stale_reader() as conn:
        found = db_providers.describe(conn, uuids)
    return [{'provider_uuid': p.uuid, 'name': p.name, 'resource_class': name,
             'used': used, 'capacity': capacity.capacity(inv),
             'total': inv.total, 'reserved': inv.reserved}
            for p, classes in found for name, (inv, used) in classes.items()]
