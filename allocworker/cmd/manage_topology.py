"""allocworker-manage topology ...: topology levels, which map Placement
aggregates to the labels of failure domains (racks, zones) that group
rules are judged at (RPC 1.5)."""

from allocworker.cmd import commands as cli
from allocworker.conf import CONF
from allocworker.groups import topology

TOPOLOGY_COLUMNS = ['level', 'label', 'aggregates', 'roots']


def parse_domains(pairs):
    """{aggregate uuid: label} of AGGREGATE=LABEL arguments."""
    domains = {}
    for pair in pairs:
        aggregate, sep, label = pair.partition('=')
        aggregate, label = aggregate.strip(), label.strip()
        if not sep or not aggregate or not label:
            raise cli.CommandError('%r is not AGGREGATE=LABEL' % pair)
        if domains.get(aggregate, label) != label:
            raise cli.CommandError('aggregate %s is given two labels (%s, '
                                   '%s)' % (aggregate, domains[aggregate],
                                            label))
        domains[aggregate] = label
    return domains


def topology_rows(items):
    """A row per level and label: the label's aggregates (one a line)
    and how many roots it holds; a level without domains gets one row."""
    rows = []
    for item in items:
        by_label = {}
        for aggregate, label in sorted(item['domains'].items()):
            by_label.setdefault(label, []).append(aggregate)
        # Level partition maps no aggregates: its labels are its roots'.
        for label in item['roots']:
            by_label.setdefault(label, [])
        if not by_label:
            rows.append({'level': item['name'], 'roots': 0})
        for label, aggregates in sorted(by_label.items()):
            rows.append({'level': item['name'], 'label': label,
                         'aggregates': '\n'.join(aggregates) or None,
                         'roots': item['roots'].get(label, 0)})
    return rows


def _emit(items):
    if CONF.command.format == 'json':
        return cli.emit(items, [])
    cli.emit(topology_rows(items), TOPOLOGY_COLUMNS)


def topology_set():
    args = CONF.command
    domains = parse_domains(args.domains)
    _emit(cli.items(topology.set_topology_level(
        cli.context(), args.level_name, domains)))


def topology_show():
    names = CONF.command.names or None
    _emit(cli.items(topology.get_topology(cli.context(), names)))


def topology_delete():
    name = CONF.command.level_name
    cli.items(topology.delete_topology_level(cli.context(), name))
    print('deleted topology level %s' % name)
