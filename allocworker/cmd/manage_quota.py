"""allocworker-manage quota ...: a project's limits beside its usage."""

from allocworker.cmd import commands as cli
from allocworker.cmd import output
from allocworker.conf import CONF
from allocworker.quota import report

COLUMNS = ['resource', 'limit', 'usage', 'remaining', 'used']


def quota_show():
    """The same items as RPC get_limits, read from Keystone by this
    command (``[quota]`` and ``[oslo_limit]`` of its configuration), with
    a bar per resource."""
    project_id = CONF.command.project
    items = cli.items(report.get_limits(cli.context(), project_id))
    if CONF.command.format == 'json':
        return cli.emit(items, [])
    if not items and CONF.quota.driver == 'noop':
        print('no limits: [quota] driver = noop')
        return
    cli.emit([dict(item, used=output.bar(item['usage'], item['limit']))
              for item in items], COLUMNS)
