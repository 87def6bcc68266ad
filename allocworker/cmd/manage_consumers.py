"""allocworker-manage consumer, event and candidates: consumers, the
events about them, and where a consumer would fit."""

import json

from allocworker.allocations import consumers
from allocworker.cmd import commands as cli
from allocworker.conf import CONF
from allocworker.events import external as events
from allocworker.scheduling import lookup

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
