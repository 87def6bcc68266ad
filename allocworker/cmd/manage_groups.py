"""allocworker-manage group ...: consumer groups and their members."""

from allocworker.cmd import commands as cli
from allocworker.cmd import output
from allocworker.conf import CONF
from allocworker.groups import membership as groups
from allocworker.groups import report


GROUP_COLUMNS = ['uuid', 'name', 'policy', 'max_per_root', 'members',
                 'generation']
DOMAIN_COLUMNS = ['domain', 'members', 'bar']
RULE_INTEGERS = ('max_per_domain', 'max_domains', 'max_skew', 'min_domains')
RULE_KEYS = ('policy', 'scope', 'enforcement', 'consumer_types') + \
    RULE_INTEGERS


def parse_rule(text):
    """A rule dict of --rule's KEY=VALUE[,KEY=VALUE...]: integers for
    max_* and min_domains, consumer_types separated by '+'. What the
    values mean is the service layer's to judge."""
    rule = {}
    for part in text.split(','):
        key, sep, value = (s.strip() for s in part.partition('='))
        if not sep or not key or not value:
            raise _bad_rule(text, '%r is not KEY=VALUE' % part.strip())
        if key not in RULE_KEYS:
            raise _bad_rule(text, 'unknown key %s (one of %s)'
                            % (key, ', '.join(RULE_KEYS)))
        if key in rule:
            raise _bad_rule(text, '%s is given twice' % key)
        if key in RULE_INTEGERS:
            try:
                value = int(value)
            except ValueError:
                raise _bad_rule(text, '%s must be an integer, not %r'
                                % (key, value))
        elif key == 'consumer_types':
            value = [t.strip() for t in value.split('+')]
            if not all(value):
                raise _bad_rule(text, 'consumer_types must be TYPE[+TYPE'
                                '...], not %r' % '+'.join(value))
        rule[key] = value
    if 'policy' not in rule:
        raise _bad_rule(text, 'policy=anti-affinity|affinity|spread is '
                        'required')
    return rule


def _bad_rule(text, reason):
    return cli.CommandError('--rule %r: %s' % (text, reason))


def _summary(rules):
    """The rules of a group without a 1.0 policy, for its policy cell."""
    return '; '.join('%s at %s' % (r['policy'], r['scope']) for r in rules)


def _group_rows(items):
    return [dict(item, members=len(item['members']),
                 policy=item['policy'] or _summary(item.get('rules') or [])
                 or None)
            for item in items]


def _emit_group(item):
    cli.emit(_group_rows([item]) if CONF.command.format == 'table' else item,
             GROUP_COLUMNS)


def group_create():
    args = CONF.command
    rules = None if args.rules is None else [parse_rule(r)
                                             for r in args.rules]
    _emit_group(cli.items(groups.create_group(
        cli.context(), args.uuid, args.group_name, args.policy,
        args.max_per_root, args.project_id, rules))[0])


def group_update():
    args = CONF.command
    rules = [parse_rule(r) for r in args.rules]
    _emit_group(cli.items(groups.update_group(
        cli.context(), args.uuid, args.generation, rules, args.force))[0])


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
    for state in item.get('domains', []):
        print()
        _show_rule(item['rules'][state['rule']], state)


def _show_rule(rule, state):
    """A rule's members per domain, as a bar each, and its verdict."""
    counts = state['counts']
    largest = max(counts.values(), default=0)
    cli.emit([{'domain': domain, 'members': count,
               'bar': output.count_bar(count, largest)}
              for domain, count in counts.items()], DOMAIN_COLUMNS)
    skew = ' skew %d,' % state['skew'] if 'skew' in state else ''
    print('rule %d: %s at %s:%s satisfied %s'
          % (state['rule'], rule['policy'], rule['scope'], skew,
             'yes' if state['satisfied'] else 'no'))
    if state.get('unplaced'):
        print('rule %d: on roots without a domain at %s: %s'
              % (state['rule'], rule['scope'], ', '.join(state['unplaced'])))


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
