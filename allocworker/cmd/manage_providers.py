"""allocworker-manage provider, inventory, resource-class and usage:
providers and what they offer."""

from allocworker.cmd import commands as cli
from allocworker.cmd import output
from allocworker.conf import CONF
from allocworker import partitions
from allocworker.providers import resource_classes
from allocworker.providers import rules as providers
from allocworker.providers import tree

PROVIDER_COLUMNS = ['uuid', 'name', 'generation', 'parent_uuid', 'root_uuid',
                    'partition']


def provider_create():
    args = CONF.command
    cli.emit(cli.items(providers.create_provider(
        cli.context(), args.uuid, args.provider_name, args.parent,
        args.partition)), PROVIDER_COLUMNS)


def _in_partition(rows):
    """The rows of the partition ``--partition`` names (every row
    without it); a malformed name is refused as the service refuses
    one."""
    wanted = CONF.command.partition
    if wanted is None:
        return rows
    partitions.parse(wanted, '--partition')
    return [row for row in rows if row.get('partition') == wanted]


def provider_list():
    cli.emit(_in_partition(providers.get_providers(cli.context())),
             PROVIDER_COLUMNS)


def provider_show():
    item = cli.items(providers.get_providers(
        cli.context(), [CONF.command.uuid]))[0]
    if CONF.command.format == 'json':
        return cli.emit(item, [])
    cli.emit([item], PROVIDER_COLUMNS)
    print()
    cli.emit(_inventory_rows(item['inventories']), INVENTORY_COLUMNS)


def provider_set_partition():
    args = CONF.command
    cli.emit(cli.items(tree.set_partition(cli.context(), args.uuid,
                                          args.partition)),
             PROVIDER_COLUMNS)


def provider_delete():
    cli.items(providers.delete_provider(cli.context(), CONF.command.uuid))
    print('deleted provider %s' % CONF.command.uuid)


# -- inventories ---------------------------------------------------------

INVENTORY_COLUMNS = ['resource_class', 'total', 'reserved', 'min_unit',
                     'max_unit', 'step_size', 'allocation_ratio']


def _inventory_rows(inventories):
    return [dict(resource_class=name, **fields)
            for name, fields in sorted(inventories.items())]


def inventory_show():
    item = cli.items(providers.get_providers(
        cli.context(), [CONF.command.uuid]))[0]
    cli.emit(_inventory_rows(item['inventories']), INVENTORY_COLUMNS)


def inventory_set():
    """Set one class's inventory, keeping the provider's other classes."""
    args = CONF.command
    context = cli.context()
    item = cli.items(providers.get_providers(context, [args.uuid]))[0]
    inventories = dict(item['inventories'])
    fields = {'total': args.total}
    for name in ('reserved', 'min_unit', 'max_unit', 'step_size',
                 'allocation_ratio'):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    inventories[args.resource_class] = fields
    result = cli.items(providers.set_inventories(
        context, args.uuid, item['generation'], inventories,
        force=args.force))[0]
    cli.emit(_inventory_rows(result['inventories']), INVENTORY_COLUMNS)


def inventory_delete():
    args = CONF.command
    context = cli.context()
    item = cli.items(providers.get_providers(context, [args.uuid]))[0]
    inventories = dict(item['inventories'])
    if inventories.pop(args.resource_class, None) is None:
        raise cli.CommandError('provider %s has no inventory of %s'
                               % (args.uuid, args.resource_class))
    cli.items(providers.set_inventories(context, args.uuid, item['generation'],
                                        inventories))
    print('removed %s inventory from provider %s'
          % (args.resource_class, args.uuid))


# -- resource classes, usage ---------------------------------------------

def resource_class_create():
    item = cli.items(resource_classes.create_resource_class(
        cli.context(), CONF.command.class_name))[0]
    print('%s %s' % ('created' if item['created'] else 'already exists:',
                     item['name']))


def resource_class_list():
    cli.emit(resource_classes.list_resource_classes(cli.context()),
             ['name'])


USAGE_COLUMNS = ['provider', 'partition', 'resource_class', 'used',
                 'capacity', 'bar']


def usage():
    uuids = CONF.command.uuids or None
    rows = providers.describe_usage(uuids)
    # Usage rows name no partition; the providers' items do.
    placed = {item['uuid']: item['partition'] for item in
              providers.get_providers(cli.context(), uuids)
              if item['status'] == 200} if rows else {}
    for row in rows:
        row.setdefault('partition', placed.get(row['provider_uuid']))
    rows = _in_partition(rows)
    for row in rows:
        row['provider'] = row['name']
        row['bar'] = output.bar(row['used'], row['capacity'])
    if CONF.command.format == 'json':
        for row in rows:
            del row['bar'], row['provider']
    cli.emit(rows, USAGE_COLUMNS)
