"""allocworker-manage group ...: consumer groups and their members."""

from allocworker.cmd import commands as cli
from allocworker.conf import CONF
from allocworker.groups import membership as groups
from allocworker.groups import report


GROUP_COLUMNS = ['uuid', 'name', 'policy', 'max_per_root', 'members',
                 'generation']


def _group_rows(items):
    return [dict(item, members=len(item['members'])) for item in items]


def group_create():
    args = CONF.command
    item = cli.items(groups.create_group(
        cli.context(), args.uuid, args.group_name, args.policy,
        args.max_per_root, args.project_id))[0]
    cli.emit(_group_rows([item]) if CONF.command.format == 'table' else item,
             GROUP_COLUMNS)


def group_list():
    items = report.get_groups(cli.context(), None, CONF.command.project_id)
    cli.emit(_group_rows(items) if CONF.command.format == 'table' else items,
             GROUP_COLUMNS)


def group_show():
    item = cli.items(report.get_groups(cli.context(), [CONF.command.uuid]))[0]
    if CONF.command.format == 'json':
        return cli.emit(item, [])
    cli.emit(_group_rows([item]), GROUP_COLUMNS)
    print()
    where = {m: root for root, members in item['roots'].items()
             for m in members}
    cli.emit([{'member': m, 'root_provider': where.get(m)}
              for m in item['members']], ['member', 'root_provider'])


def group_delete():
    cli.items(groups.delete_group(cli.context(), CONF.command.uuid))
    print('deleted group %s' % CONF.command.uuid)


def group_add():
    args = CONF.command
    added = groups.add_members(cli.context(), args.uuid, args.members)
    cli.emit(cli.items(added), ['consumer_uuid', 'status', 'warnings'])


def group_remove():
    args = CONF.command
    removed = groups.remove_members(cli.context(), args.uuid, args.members)
    cli.emit(cli.items(removed), ['consumer_uuid', 'status'])
