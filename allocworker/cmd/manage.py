"""allocworker-manage: the operator's command line.

It talks to the database through the same service layer as the worker, so
every rule and every error code is the one RPC callers see.
"""

import json
import sys

from oslo_config import cfg
from oslo_context import context as oslo_context

from allocworker import books
from allocworker.cmd import common
from allocworker.cmd import output
from allocworker import codes
from allocworker.allocations import consumers
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db import migration
from allocworker.events import external as events
from allocworker.groups import membership as groups
from allocworker.providers import rules as providers
from allocworker.scheduling import lookup


class CommandError(Exception):
    """A one-line reason to print before exiting non-zero."""


def _context():
    return oslo_context.RequestContext(
        roles=['admin'], user_id='allocworker-manage',
        project_id='allocworker-manage', is_admin=True)


def _items(items):
    """Items of a service call; the first failure becomes the error."""
    for item in items:
        if item['status'] >= 400:
            raise CommandError('%s (%s): %s' % (item['code'], item['status'],
                                                item['detail']))
    return items


def _emit(rows, columns):
    output.emit(rows, columns, CONF.command.format)


# -- db ------------------------------------------------------------------

def db_sync():
    migration.sync(CONF.command.revision)
    print('database at revision %s' % migration.current())


def db_version():
    print(migration.current() or 'none (never synced)')


# -- providers -----------------------------------------------------------

PROVIDER_COLUMNS = ['uuid', 'name', 'generation', 'parent_uuid', 'root_uuid']


def provider_create():
    args = CONF.command
    _emit(_items(providers.create_provider(
        _context(), args.uuid, args.provider_name, args.parent)),
        PROVIDER_COLUMNS)


def provider_list():
    _emit(providers.get_providers(_context()), PROVIDER_COLUMNS)


def provider_show():
    item = _items(providers.get_providers(_context(), [CONF.command.uuid]))[0]
    if CONF.command.format == 'json':
        return _emit(item, [])
    _emit([item], PROVIDER_COLUMNS)
    print()
    _emit(_inventory_rows(item['inventories']), INVENTORY_COLUMNS)


def provider_delete():
    _items(providers.delete_provider(_context(), CONF.command.uuid))
    print('deleted provider %s' % CONF.command.uuid)


# -- inventories ---------------------------------------------------------

INVENTORY_COLUMNS = ['resource_class', 'total', 'reserved', 'min_unit',
                     'max_unit', 'step_size', 'allocation_ratio']


def _inventory_rows(inventories):
    return [dict(resource_class=name, **fields)
            for name, fields in sorted(inventories.items())]


def inventory_show():
    item = _items(providers.get_providers(_context(), [CONF.command.uuid]))[0]
    _emit(_inventory_rows(item['inventories']), INVENTORY_COLUMNS)


def inventory_set():
    """Set one class's inventory, keeping the provider's other classes."""
    args = CONF.command
    context = _context()
    item = _items(providers.get_providers(context, [args.uuid]))[0]
    inventories = dict(item['inventories'])
    fields = {'total': args.total}
    for name in ('reserved', 'min_unit', 'max_unit', 'step_size',
                 'allocation_ratio'):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    inventories[args.resource_class] = fields
    result = _items(providers.set_inventories(
        context, args.uuid, item['generation'], inventories,
        force=args.force))[0]
    _emit(_inventory_rows(result['inventories']), INVENTORY_COLUMNS)


def inventory_delete():
    args = CONF.command
    context = _context()
    item = _items(providers.get_providers(context, [args.uuid]))[0]
    inventories = dict(item['inventories'])
    if inventories.pop(args.resource_class, None) is None:
        raise CommandError('provider %s has no inventory of %s'
                           % (args.uuid, args.resource_class))
    _items(providers.set_inventories(context, args.uuid, item['generation'],
                                     inventories))
    print('removed %s inventory from provider %s'
          % (args.resource_class, args.uuid))


# -- resource classes, usage, consumers ------------------------------------

def resource_class_create():
    item = _items(providers.create_resource_class(
        _context(), CONF.command.class_name))[0]
    print('%s %s' % ('created' if item['created'] else 'already exists:',
                     item['name']))


def resource_class_list():
    _emit(providers.list_resource_classes(_context()), ['name'])


USAGE_COLUMNS = ['provider', 'resource_class', 'used', 'capacity', 'bar']


def usage():
    rows = providers.describe_usage(CONF.command.uuids or None)
    for row in rows:
        row['provider'] = row['name']
        row['bar'] = output.bar(row['used'], row['capacity'])
    if CONF.command.format == 'json':
        for row in rows:
            del row['bar'], row['provider']
    _emit(rows, USAGE_COLUMNS)


CONSUMER_COLUMNS = ['consumer_uuid', 'consumer_generation', 'project_id',
                    'user_id', 'consumer_type']


def consumer_list():
    args = CONF.command
    _emit(consumers.list_consumers(_context(), args.project_id,
                                   args.limit, args.marker),
          CONSUMER_COLUMNS)


def consumer_show():
    item = _items(consumers.get_allocations(_context(),
                                            [CONF.command.uuid]))[0]
    if CONF.command.format == 'json':
        return _emit(item, [])
    _emit([item], CONSUMER_COLUMNS)
    print()
    _emit([{'provider_uuid': p, 'resource_class': name, 'used': used}
           for p, held in sorted(item['allocations'].items())
           for name, used in sorted(held['resources'].items())],
          ['provider_uuid', 'resource_class', 'used'])


EVENT_COLUMNS = ['received_at', 'consumer_uuid', 'name', 'tag',
                 'event_status', 'held_until']


def event_list():
    args = CONF.command
    _emit(events.list_events(args.consumer, args.limit), EVENT_COLUMNS)


GROUP_COLUMNS = ['uuid', 'name', 'policy', 'max_per_root', 'members',
                 'generation']


def _group_rows(items):
    return [dict(item, members=len(item['members'])) for item in items]


def group_create():
    args = CONF.command
    item = _items(groups.create_group(
        _context(), args.uuid, args.group_name, args.policy,
        args.max_per_root, args.project_id))[0]
    _emit(_group_rows([item]) if CONF.command.format == 'table' else item,
          GROUP_COLUMNS)


def group_list():
    items = groups.get_groups(_context(), None, CONF.command.project_id)
    _emit(_group_rows(items) if CONF.command.format == 'table' else items,
          GROUP_COLUMNS)


def group_show():
    item = _items(groups.get_groups(_context(), [CONF.command.uuid]))[0]
    if CONF.command.format == 'json':
        return _emit(item, [])
    _emit(_group_rows([item]), GROUP_COLUMNS)
    print()
    where = {m: root for root, members in item['roots'].items()
             for m in members}
    _emit([{'member': m, 'root_provider': where.get(m)}
           for m in item['members']], ['member', 'root_provider'])


def group_delete():
    _items(groups.delete_group(_context(), CONF.command.uuid))
    print('deleted group %s' % CONF.command.uuid)


def group_add():
    args = CONF.command
    _emit(_items(groups.add_members(_context(), args.uuid, args.members)),
          ['consumer_uuid', 'status', 'warnings'])


def group_remove():
    args = CONF.command
    _emit(_items(groups.remove_members(_context(), args.uuid, args.members)),
          ['consumer_uuid', 'status'])


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
        _emit(rows, sorted(rows[0]))
        print()
    if breaches:
        raise CommandError('%d invariant(s) broken'
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
        raise CommandError('give --request JSON or --resources A:1,B:2 (%s)'
                           % exc)
    found = lookup.get_allocation_candidates(_context(), request, args.limit)
    _emit(found if args.format == 'json' else [
        {'candidate': n, 'root_uuid': c['root_uuid'], 'provider': provider,
         'resources': wanted, 'used': c['providers'][provider]['used'],
         'capacity': c['providers'][provider]['capacity']}
        for n, c in enumerate(found, 1)
        for provider, wanted in sorted(c['allocations'].items())],
        ['candidate', 'root_uuid', 'provider', 'resources', 'used',
         'capacity'])


# -- the command tree ----------------------------------------------------

def _add(subparsers, name, handler, help_text, args=()):
    parser = subparsers.add_parser(name, help=help_text)
    parser.set_defaults(handler=handler)
    parser.add_argument('--format', choices=['table', 'json'],
                        default='table', help='output format')
    for flags, kwargs in args:
        parser.add_argument(*flags, **kwargs)
    return parser


def _category(subparsers, name, help_text):
    parser = subparsers.add_parser(name, help=help_text)
    return parser.add_subparsers(dest='action', required=True)


def add_command_parsers(subparsers):
    sub = _category(subparsers, 'db', 'database schema')
    _add(sub, 'sync', db_sync, 'upgrade the schema to the newest revision',
         [(['revision'], dict(nargs='?', default='head'))])
    _add(sub, 'version', db_version, 'print the schema revision')

    sub = _category(subparsers, 'provider', 'resource providers')
    _add(sub, 'create', provider_create, 'create a provider',
         [(['--uuid'], dict(required=True)),
          (['--name'], dict(required=True, dest='provider_name')),
          (['--parent'], dict(default=None, help='parent provider uuid'))])
    _add(sub, 'list', provider_list, 'list providers')
    _add(sub, 'show', provider_show, 'show a provider and its inventory',
         [(['uuid'], {})])
    _add(sub, 'delete', provider_delete, 'delete a provider',
         [(['uuid'], {})])

    sub = _category(subparsers, 'inventory', 'provider inventories')
    _add(sub, 'show', inventory_show, "show a provider's inventory",
         [(['uuid'], {})])
    _add(sub, 'set', inventory_set,
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
    _add(sub, 'delete', inventory_delete,
         'remove one resource class from a provider',
         [(['uuid'], {}), (['resource_class'], {})])

    sub = _category(subparsers, 'resource-class', 'resource classes')
    _add(sub, 'create', resource_class_create, 'create a CUSTOM_ class',
         [(['class_name'], dict(metavar='NAME'))])
    _add(sub, 'list', resource_class_list, 'list resource classes')

    parser = _add(subparsers, 'usage', usage,
                  'used and capacity per provider and resource class',
                  [(['uuids'], dict(nargs='*', metavar='PROVIDER_UUID'))])
    parser.set_defaults(action=None)

    sub = _category(subparsers, 'consumer', 'consumers and allocations')
    _add(sub, 'list', consumer_list, 'list consumers (one page)',
         [(['--project-id'], dict(dest='project_id')),
          (['--limit'], dict(type=int, default=100)),
          (['--marker'], dict())])
    _add(sub, 'show', consumer_show, "show a consumer's allocations",
         [(['uuid'], {})])

    sub = _category(subparsers, 'group', 'consumer groups')
    _add(sub, 'create', group_create, 'create a consumer group',
         [(['--uuid'], dict(required=True)),
          (['--name'], dict(required=True, dest='group_name')),
          (['--policy'], dict(required=True, choices=[
              'affinity', 'anti-affinity', 'soft-affinity',
              'soft-anti-affinity'])),
          (['--max-per-root'], dict(type=int, dest='max_per_root')),
          (['--project-id'], dict(dest='project_id'))])
    _add(sub, 'list', group_list, 'list consumer groups',
         [(['--project-id'], dict(dest='project_id'))])
    _add(sub, 'show', group_show,
         'show a group, its members and the roots they sit on',
         [(['uuid'], {})])
    _add(sub, 'delete', group_delete, 'delete a group (allocations stay)',
         [(['uuid'], {})])
    _add(sub, 'add', group_add, 'add members to a group',
         [(['uuid'], {}), (['members'], dict(nargs='+',
                                             metavar='CONSUMER_UUID'))])
    _add(sub, 'remove', group_remove, 'remove members from a group',
         [(['uuid'], {}), (['members'], dict(nargs='+',
                                             metavar='CONSUMER_UUID'))])

    parser = _add(subparsers, 'audit', audit,
                  "check every invariant of the books; exit 1 on a breach",
                  [(['--grace-seconds'], dict(
                      type=int, default=0,
                      help='tolerate held events this late for expiry'))])
    parser.set_defaults(action=None)

    parser = _add(subparsers, 'candidates', candidates,
                  'where a request would fit (get_allocation_candidates)',
                  [(['--request'], dict(help="design's request as JSON")),
                   (['--resources'], dict(help='shorthand for one group: '
                                          'VCPU:2,MEMORY_MB:1024')),
                   (['--limit'], dict(type=int, default=1000))])
    parser.set_defaults(action=None)

    sub = _category(subparsers, 'event', 'external events')
    _add(sub, 'list', event_list, 'list stored events, newest first',
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
    except CommandError as exc:
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
