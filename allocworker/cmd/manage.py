"""allocworker-manage: the operator's command line.

It talks to the database through the same service layer as the worker, so
every rule and every error code is the one RPC callers see.

This module is the command tree. Each command names its function in the
``manage_*`` module of its category, imported only when the command
runs: the service layer, with oslo.messaging, the database machinery and
alembic beneath it, takes longer to import than most commands take to
run, and help needs none of it.
"""

import sys

from oslo_config import cfg

from allocworker.cmd import commands as cli
from allocworker.cmd import common
from allocworker import codes
from allocworker.conf import CONF


def _db(subparsers):
    sub = cli.category(subparsers, 'db', 'database schema')
    cli.add(sub, 'sync', 'manage_db.db_sync',
            'upgrade the schema to the newest revision',
            [(['revision'], dict(nargs='?', default='head'))])
    cli.add(sub, 'version', 'manage_db.db_version',
            'print the schema revision')
    cli.add(sub, 'refresh-room', 'manage_books.db_refresh_room',
            'set the room left of every usage counter, and the project '
            'usage counters, again (after a rolling upgrade from a '
            'release before 0.3)')


# Listings of providers narrowed to one partition (filtered by each
# item's ``partition``: the command is an unbound operator, who sees all).
PARTITION = (['--partition'], dict(default=None, help='only providers of '
                                   'this partition'))


def _providers(subparsers):
    sub = cli.category(subparsers, 'provider', 'resource providers')
    cli.add(sub, 'create', 'manage_providers.provider_create',
            'create a provider',
            [(['--uuid'], dict(required=True)),
             (['--name'], dict(required=True, dest='provider_name')),
             (['--parent'], dict(default=None, help='parent provider uuid')),
             (['--partition'], dict(default=None, help="default: the "
                                    "parent's, or 'default' for a root"))])
    cli.add(sub, 'list', 'manage_providers.provider_list', 'list providers',
            [PARTITION])
    cli.add(sub, 'show', 'manage_providers.provider_show',
            'show a provider and its inventory', [(['uuid'], {})])
    cli.add(sub, 'delete', 'manage_providers.provider_delete',
            'delete a provider', [(['uuid'], {})])
    cli.add(sub, 'set-partition', 'manage_providers.provider_set_partition',
            "move a root provider's whole tree to another partition (only "
            'while it holds no allocations)',
            [(['uuid'], {}), (['partition'], {})])

    sub = cli.category(subparsers, 'inventory', 'provider inventories')
    cli.add(sub, 'show', 'manage_providers.inventory_show',
            "show a provider's inventory", [(['uuid'], {})])
    cli.add(sub, 'set', 'manage_providers.inventory_set',
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
    cli.add(sub, 'delete', 'manage_providers.inventory_delete',
            'remove one resource class from a provider',
            [(['uuid'], {}), (['resource_class'], {})])

    sub = cli.category(subparsers, 'resource-class', 'resource classes')
    cli.add(sub, 'create', 'manage_providers.resource_class_create',
            'create a CUSTOM_ class',
            [(['class_name'], dict(metavar='NAME'))])
    cli.add(sub, 'list', 'manage_providers.resource_class_list',
            'list resource classes')

    parser = cli.add(subparsers, 'usage', 'manage_providers.usage',
                     'used and capacity per provider and resource class',
                     [(['uuids'], dict(nargs='*', metavar='PROVIDER_UUID')),
                      PARTITION])
    parser.set_defaults(action=None)


def _consumers(subparsers):
    sub = cli.category(subparsers, 'consumer', 'consumers and allocations')
    cli.add(sub, 'list', 'manage_consumers.consumer_list',
            'list consumers (one page)',
            [(['--project-id'], dict(dest='project_id')),
             (['--limit'], dict(type=int, default=100)),
             (['--marker'], dict())])
    cli.add(sub, 'show', 'manage_consumers.consumer_show',
            "show a consumer's allocations", [(['uuid'], {})])


# A group's rule as KEY=VALUE[,KEY=VALUE...] (manage_groups.parse_rule).
RULE = dict(
    action='append', dest='rules', metavar='KEY=VALUE[,KEY=VALUE...]',
    help='a rule: policy=anti-affinity|affinity|spread, scope=LEVEL '
         '(default root), max_per_domain=N, max_domains=N, max_skew=N, '
         'min_domains=N, enforcement=hard|soft, consumer_types=T1+T2; '
         'repeat for more rules')


def _groups(subparsers):
    sub = cli.category(subparsers, 'group', 'consumer groups')
    create = cli.add(sub, 'create', 'manage_groups.group_create',
                     'create a consumer group: one 1.0 --policy, or '
                     '--rule (repeatable) at any scope',
                     [(['--uuid'], dict(required=True)),
                      (['--name'], dict(required=True, dest='group_name')),
                      (['--max-per-root'], dict(type=int,
                                                dest='max_per_root')),
                      (['--project-id'], dict(dest='project_id'))])
    given = create.add_mutually_exclusive_group(required=True)
    given.add_argument('--policy', choices=[
        'affinity', 'anti-affinity', 'soft-affinity', 'soft-anti-affinity'])
    given.add_argument('--rule', **RULE)
    cli.add(sub, 'update', 'manage_groups.group_update',
            "replace a group's rules under its generation",
            [(['uuid'], {}),
             (['--generation'], dict(type=int, required=True)),
             (['--rule'], dict(RULE, required=True)),
             (['--force'], dict(action='store_true',
                                help="even when members' allocations break "
                                     "a new hard rule"))])
    cli.add(sub, 'list', 'manage_groups.group_list', 'list consumer groups',
            [(['--project-id'], dict(dest='project_id'))])
    cli.add(sub, 'show', 'manage_groups.group_show',
            'show a group, its members and the roots they sit on',
            [(['uuid'], {})])
    cli.add(sub, 'delete', 'manage_groups.group_delete',
            'delete a group (allocations stay)', [(['uuid'], {})])
    cli.add(sub, 'add', 'manage_groups.group_add', 'add members to a group',
            [(['uuid'], {}), (['members'], dict(nargs='+',
                                                metavar='CONSUMER_UUID'))])
    cli.add(sub, 'remove', 'manage_groups.group_remove',
            'remove members from a group',
            [(['uuid'], {}), (['members'], dict(nargs='+',
                                                metavar='CONSUMER_UUID'))])


def _topology(subparsers):
    sub = cli.category(subparsers, 'topology', 'topology levels: failure '
                       'domains of aggregates')
    cli.add(sub, 'set', 'manage_topology.topology_set',
            "make these a level's domains (replacing its others), creating "
            "the level on first use",
            [(['level_name'], dict(metavar='NAME')),
             (['domains'], dict(nargs='+', metavar='AGGREGATE=LABEL'))])
    cli.add(sub, 'show', 'manage_topology.topology_show',
            'levels with their domains, aggregates and roots per domain',
            [(['names'], dict(nargs='*', metavar='NAME'))])
    cli.add(sub, 'delete', 'manage_topology.topology_delete',
            'delete a level no group rule names',
            [(['level_name'], dict(metavar='NAME'))])


def _quota(subparsers):
    sub = cli.category(subparsers, 'quota', 'project limits')
    cli.add(sub, 'show', 'manage_quota.quota_show',
            "a project's limits, usage and what remains",
            [(['--project'], dict(required=True, metavar='PROJECT_ID'))])


def _placement(subparsers):
    sub = cli.category(subparsers, 'placement', 'moving from OpenStack '
                       'Placement')
    cli.add(sub, 'import', 'manage_placement.placement_import',
            "copy a Placement 16 database's books into allocworker's",
            [(['--from-connection'], dict(
              required=True, dest='from_connection', metavar='URL',
              help="Placement's [placement_database] connection")),
             (['--catch-up'], dict(
              action='store_true', dest='catch_up',
              help='copy only what changed since the previous pass')),
             (['--dry-run'], dict(
              action='store_true', dest='dry_run',
              help='judge and write everything, then roll it back')),
             (['--force'], dict(
              action='store_true',
              help="replace a non-empty target's books with Placement's")),
             (['--overlap-seconds'], dict(
              type=int, default=300, dest='overlap_seconds',
              help='catch-up reads changes from this long before the '
                   'newest one the previous pass copied')),
             (['--partition'], dict(
              default='default',
              help='the partition every imported provider lands in; '
                   'only its books are checked, replaced or caught up'))])
    cli.add(sub, 'compare', 'manage_placement.placement_compare',
            'list every difference between two Placement-API endpoints; '
            'exit 0 only when they agree',
            [(['--endpoint'], dict(required=True, metavar='URL')),
             (['--other-endpoint'], dict(
              dest='other_endpoint', metavar='URL',
              help="default: allocworker's own books, read through the "
                   "REST shim in this process")),
             (['--token'], dict(default='admin',
                                help='x-auth-token for --endpoint')),
             (['--other-token'], dict(dest='other_token', default='admin',
                                      help='x-auth-token for '
                                           '--other-endpoint')),
             (['--partition'], dict(
              help="compare only this partition's providers and their "
                   "consumers with --endpoint (default: all)"))])


def _audit(subparsers):
    parser = cli.add(subparsers, 'audit', 'manage_books.audit',
                     "check every invariant of the books; exit 1 on a breach",
                     [(['--grace-seconds'], dict(
                      type=int, default=0,
                      help='tolerate held events this late for expiry'))])
    parser.set_defaults(action=None)


def _candidates(subparsers):
    parser = cli.add(subparsers, 'candidates', 'manage_consumers.candidates',
                     'where a request would fit (get_allocation_candidates)',
                     [(['--request'], dict(help="design's request as JSON")),
                      (['--resources'], dict(help='shorthand for one group: '
                                             'VCPU:2,MEMORY_MB:1024')),
                      (['--limit'], dict(type=int, default=1000))])
    parser.set_defaults(action=None)


def _events(subparsers):
    sub = cli.category(subparsers, 'event', 'external events')
    cli.add(sub, 'list', 'manage_consumers.event_list',
            'list stored events, newest first',
            [(['--consumer'], dict(help='only events of this consumer uuid')),
             (['--limit'], dict(type=int, default=100))])


def add_command_parsers(subparsers):
    # In the order help lists them.
    for add in (_db, _providers, _consumers, _groups, _topology, _quota,
                _placement, _audit, _candidates, _events):
        add(subparsers)


command_opt = cfg.SubCommandOpt('command', title='Commands',
                                help='run "allocworker-manage CATEGORY -h"',
                                handler=add_command_parsers)


def main(argv=None):
    CONF.register_cli_opt(command_opt)
    try:
        common.parse(sys.argv[1:] if argv is None else argv)
        # Imported only now that the command line is parsed (help and
        # usage errors need neither the database machinery nor the
        # command's module), but before logging is set up, as when they
        # were imported with this module: what libraries log as they load
        # (alembic, its plugins) stays out of the command's output.
        from allocworker.db import api as db
        command = cli.load(CONF.command.handler)
        common.setup_logging()
    except cfg.Error as exc:
        print('allocworker-manage: %s' % exc, file=sys.stderr)
        return 2
    try:
        db.configure(CONF)
        command()
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
