"""allocworker-manage: the operator's command line.

It talks to the database through the same service layer as the worker, so
every rule and every error code is the one RPC callers see.
"""

import json
import sys

from oslo_config import cfg

from allocworker import books
from allocworker.cmd import commands as cli
from allocworker.cmd import common
from allocworker.cmd import manage_groups
from allocworker.cmd import manage_placement
from allocworker.cmd import manage_quota
from allocworker.cmd import output
from allocworker import codes
from allocworker.allocations import consumers
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db import migration
from allocworker.events import external as events
from allocworker.providers import rules as providers
from allocworker.scheduling import lookup


# -- db ------------------------------------------------------------------

def db_sync():
    migration.sync(CONF.command.revision)
    print('database at revision %s' % migration.current())


def db_version():
    print(migration.current() or 'none (never synced)')


def db_refresh_room():
    print('room left corrected on %d usage counter(s)' % books.refresh_room())
    print('project usage corrected on %d counter(s)'
          % books.refresh_projects())


# -- providers -----------------------------------------------------------

PROVIDER_COLUMNS = ['uuid', 'name', 'generation', 'parent_uuid', 'root_uuid']


def provider_create():
    args = CONF.command
    cli.emit(cli.items(providers.create_provider(
        cli.context(), args.uuid, args.provider_name, args.parent)),
        PROVIDER_COLUMNS)


def provider_list():
    cli.emit(providers.get_providers(cli.context()), PROVIDER_COLUMNS)


def provider_show():
    item = cli.items(providers.get_providers(
        cli.context(), [CONF.command.uuid]))[0]
    if CONF.command.format == 'json':
        return cli.emit(item, [])
    cli.emit([item], PROVIDER_COLUMNS)
    print()
    cli.emit(_inventory_rows(item['inventories']), INVENTORY_COLUMNS)


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


# -- resource classes, usage, consumers ------------------------------------

def resource_class_create():
    item = cli.items(providers.create_resource_class(
        cli.context(), CONF.command.class_name))[0]
    print('%s %s' % ('created' if item['created'] else 'already exists:',
                     item['name']))


def resource_class_list():
    cli.emit(providers.list_resource_classes(cli.context()), ['name'])


USAGE_COLUMNS = ['provider', 'resource_class', 'used', 'capacity', 'bar']


def usage():
    rows = providers.describe_usage(CONF.command.uuids or None)
    for row in rows:
        row['provider'] = row['name']
        row['bar'] = output.bar(row['used'], row['capacity'])
    if CONF.command.format == 'json':
        for row in rows:
            del row['bar'], row['provider']
    cli.emit(rows, USAGE_COLUMNS)


CONSUMER_COLUMNS = ['consumer_uuid', 'consumer_generation', 'project_id',
                    'user_id', 'consumer_type']


def consumer_list():
    args = CONF.command
    cli.emit(consumers.list_consumers(cli.context(), args.project_id,
                                      args.limit, args.marker),
             CONSUMER_COLUMNS)


def consumer_show():
    item = cli.items(consumers.get_allocations(cli.context(),
                                               [CONF.command.uuid]))[0]
    if CONF.command.format == 'json':
        return cli.emit(item, [])
    cli.emit([item], CONSUMER_COLUMNS)
    print()
    cli.emit([{'provider_uuid': p, 'resource_class': name, 'used': used}
              for p, held in sorted(item['allocations'].items())
              for name, used in sorted(held['resources'].items())],
             ['provider_uuid', 'resource_class', 'used'])


EVENT_COLUMNS = ['received_at', 'consumer_uuid', 'name', 'tag',
                 'event_status', 'held_until']


def event_list():
    args = CONF.command
    cli.emit(events.list_events(args.consumer, args.limit), EVENT_COLUMNS)


def audit():
    """Check the books; exit 0 only when every invariant holds."""
    breaches = books.check(CONF.command.grace_seconds)
    if CONF.command.format == 'json':
        output.emit({'clean': not breaches, 'breaches': breaches}, [],
                    'json')
    elif not breaches:
        print('the books are clean: every invariant holds')
    for breach in breaches if CONF.command.format == 'table' else ():
        print('BREACH: %s (%d)' % (breach['invariant'], len(breach['rows'])))
        rows = breach['rows']
        cli.emit(rows, sorted(rows[0]))
        print()
    if breaches:
        raise cli.CommandError('%d invariant(s) broken'
                               % len(breaches))


def candidates():
    """One row per provider of each candidate (the RPC call's answer)."""
    args = CONF.command
    try:
        request = json.loads(args.request) if args.request else {
            'groups': [{'resources': {
                name: int(amount) for name, amount in (
                    part.split(':') for part in args.resources.split(','))}}]}
    except (AttributeError, ValueError) as exc:
        raise cli.CommandError(
            'give --request JSON or --resources A:1,B:2 (%s)' % exc)
    found = lookup.get_allocation_candidates(
        cli.context(), request, args.limit)
    cli.emit(found if args.format == 'json' else [
        {'candidate': n, 'root_uuid': c['root_uuid'], 'provider': provider,
         'resources': wanted, 'used': c['providers'][provider]['used'],
         'capacity': c['providers'][provider]['capacity']}
        for n, c in enumerate(found, 1)
        for provider, wanted in sorted(c['allocations'].items())],
        ['candidate', 'root_uuid', 'provider', 'resources', 'used',
         'capacity'])


# -- the command tree ----------------------------------------------------

def add_command_parsers(subparsers):
    sub = cli.category(subparsers, 'db', 'database schema')
    cli.add(sub, 'sync', db_sync, 'upgrade the schema to the newest revision',
            [(['revision'], dict(nargs='?', default='head'))])
    cli.add(sub, 'version', db_version, 'print the schema revision')
    cli.add(sub, 'refresh-room', db_refresh_room,
            'set the room left of every usage counter, and the project '
            'usage counters, again (after a rolling upgrade from a '
            'release before 0.3)')

    sub = cli.category(subparsers, 'provider', 'resource providers')
    cli.add(sub, 'create', provider_create, 'create a provider',
            [(['--uuid'], dict(required=True)),
             (['--name'], dict(required=True, dest='provider_name')),
             (['--parent'], dict(default=None, help='parent provider uuid'))])
    cli.add(sub, 'list', provider_list, 'list providers')
    cli.add(sub, 'show', provider_show, 'show a provider and its inventory',
            [(['uuid'], {})])
    cli.add(sub, 'delete', provider_delete, 'delete a provider',
            [(['uuid'], {})])

    sub = cli.category(subparsers, 'inventory', 'provider inventories')
    cli.add(sub, 'show', inventory_show, "show a provider's inventory",
            [(['uuid'], {})])
    cli.add(sub, 'set', inventory_set,
            'set the inventory of one resource class on a provider',
            [(['uuid'], {}), (['resource_class'], {}),
             (['--total'], dict(type=int, required=True)),
             (['--reserved'], dict(type=int)),
             (['--min-unit'], dict(type=int, dest='min_unit')),
             (['--max-unit'], dict(type=int, dest='max_unit')),
             (['--step-size'], dict(type=int, dest='step_size')),
             (['--allocation-ratio'], dict(type=float,
                                           dest='allocation_ratio')),
             (['--force'], dict(action='store_true',
                                help='allow capacity below current usage'))])
    cli.add(sub, 'delete', inventory_delete,
            'remove one resource class from a provider',
            [(['uuid'], {}), (['resource_class'], {})])

    sub = cli.category(subparsers, 'resource-class', 'resource classes')
    cli.add(sub, 'create', resource_class_create, 'create a CUSTOM_ class',
            [(['class_name'], dict(metavar='NAME'))])
    cli.add(sub, 'list', resource_class_list, 'list resource classes')

    parser = cli.add(subparsers, 'usage', usage,
                     'used and capacity per provider and resource class',
                     [(['uuids'], dict(nargs='*', metavar='PROVIDER_UUID'))])
    parser.set_defaults(action=None)

    sub = cli.category(subparsers, 'consumer', 'consumers and allocations')
    cli.add(sub, 'list', consumer_list, 'list consumers (one page)',
            [(['--project-id'], dict(dest='project_id')),
             (['--limit'], dict(type=int, default=100)),
             (['--marker'], dict())])
    cli.add(sub, 'show', consumer_show, "show a consumer's allocations",
            [(['uuid'], {})])

    manage_groups.add_parsers(subparsers)
    manage_quota.add_parsers(subparsers)
    manage_placement.add_parsers(subparsers)

    parser = cli.add(subparsers, 'audit', audit,
                     "check every invariant of the books; exit 1 on a breach",
                     [(['--grace-seconds'], dict(
                      type=int, default=0,
                      help='tolerate held events this late for expiry'))])
    parser.set_defaults(action=None)

    parser = cli.add(subparsers, 'candidates', candidates,
                     'where a request would fit (get_allocation_candidates)',
                     [(['--request'], dict(help="design's request as JSON")),
                      (['--resources'], dict(help='shorthand for one group: '
                                             'VCPU:2,MEMORY_MB:1024')),
                      (['--limit'], dict(type=int, default=1000))])
    parser.set_defaults(action=None)

    sub = cli.category(subparsers, 'event', 'external events')
    cli.add(sub, 'list', event_list, 'list stored events, newest first',
            [(['--consumer'], dict(help='only events of this consumer uuid')),
             (['--limit'], dict(type=int, default=100))])


command_opt = cfg.SubCommandOpt('command', title='Commands',
                                help='run "allocworker-manage CATEGORY -h"',
                                handler=add_command_parsers)


def main(argv=None):
    CONF.register_cli_opt(command_opt)
    try:
        common.prepare(sys.argv[1:] if argv is None else argv)
    except cfg.Error as exc:
        print('allocworker-manage: %s' % exc, file=sys.stderr)
        return 2
    try:
        db.configure(CONF)
        CONF.command.handler()
    except cli.CommandError as exc:
        print('error: %s' % exc, file=sys.stderr)
        return 1
    except codes.Fault as fault:
        print('error: %s (%s): %s' % (fault.code.code, fault.code.status,
                                      fault.detail), file=sys.stderr)
        return 1
    except Exception as exc:
        print('error: %s: %s' % (type(exc).__name__,
                                 str(exc).splitlines()[0] if str(exc)
                                 else ''), file=sys.stderr)
        return 1
    return 0
