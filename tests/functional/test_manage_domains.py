"""allocworker-manage for failure domains (RPC 1.5), as an operator runs
it, on every backend: topology levels set, shown and deleted; groups of
rules at a level's scope created, updated and shown with their members
per domain; bad input refused in one line. Hosts, their aggregates and
the members' allocations are written through the service layer."""

import json
import uuid

import pytest

from allocworker.allocations import writes as allocations
from allocworker.cmd import output
from allocworker.providers import aggregates
from allocworker.providers import rules as providers
from tests.functional import services


def run(scratch, *args, check=True):
    return services.manage('%s/sync.conf' % scratch, *args, check=check)


def as_json(scratch, *args):
    return json.loads(run(scratch, *(args + ('--format', 'json'))).stdout)


def refused(scratch, *args):
    """stderr of a command that must fail in one line, exit 1."""
    result = run(scratch, *args, check=False)
    assert result.returncode == 1, (args, result.stdout)
    assert result.stderr.startswith('error: '), result.stderr
    assert 'Traceback' not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


def new_level(prefix):
    return '%s-%s' % (prefix, uuid.uuid4().hex[:8])


class Racks(object):
    """Two racks (aggregates) of two hosts each, written through the
    service layer; level ``name`` labels them rack-1 and rack-2."""

    def __init__(self, scratch):
        self.aggregates = [str(uuid.uuid4()), str(uuid.uuid4())]
        self.hosts = {'rack-1': [], 'rack-2': []}
        for label, aggregate in zip(sorted(self.hosts), self.aggregates):
            for _ in range(2):
                self.hosts[label].append(self._host(aggregate))
        self.name = new_level('rack')
        run(scratch, 'topology', 'set', self.name,
            '%s=rack-1' % self.aggregates[0],
            '%s=rack-2' % self.aggregates[1])

    @staticmethod
    def _host(aggregate):
        host = str(uuid.uuid4())
        item, = providers.create_provider(None, host, 'host-' + host)
        item, = providers.set_inventories(None, host, item['generation'],
                                          {'VCPU': {'total': 1000}})
        item, = aggregates.set_provider_aggregates(
            None, host, item['generation'], [aggregate])
        assert item['status'] == 200, item
        return host

    def members(self, *hosts):
        """A consumer allocated on each of ``hosts`` (rack label, index)."""
        consumers = []
        for label, index in hosts:
            consumer = str(uuid.uuid4())
            item, = allocations.allocate(None, [{
                'consumer_uuid': consumer, 'consumer_generation': None,
                'project_id': 'p', 'user_id': 'u',
                'allocations': {self.hosts[label][index]: {'VCPU': 1}}}])
            assert item['status'] == 200, item
            consumers.append(consumer)
        return consumers


@pytest.fixture(scope='module')
def racks(service_layer, scratch):
    return Racks(scratch)


def domain_rows(printed):
    """{label: [members, bar]} of the domain tables ``group show`` drew."""
    return {row[0]: row[1:] for row in services.table(printed)
            if row[0].startswith('rack-')}


def test_topology_set_and_show(racks, scratch):
    rows = services.table(run(scratch, 'topology', 'show', racks.name).stdout)
    assert rows == [['level', 'label', 'aggregates', 'roots'],
                    [racks.name, 'rack-1', racks.aggregates[0], '2'],
                    [racks.name, 'rack-2', racks.aggregates[1], '2']]
    shown, = as_json(scratch, 'topology', 'show', racks.name)
    assert shown['roots'] == {'rack-1': 2, 'rack-2': 2}
    assert shown['domains'] == {racks.aggregates[0]: 'rack-1',
                                racks.aggregates[1]: 'rack-2'}
    every = {i['name'] for i in as_json(scratch, 'topology', 'show')}
    assert racks.name in every
    assert 'topology.not_found' in refused(
        scratch, 'topology', 'show', new_level('none'))


def test_a_spread_group_shows_its_domains_as_bars(racks, scratch):
    group = str(uuid.uuid4())
    run(scratch, 'group', 'create', '--uuid', group, '--name', 'spread',
        '--rule', 'policy=spread,scope=%s,max_skew=1' % racks.name)
    first = racks.members(('rack-1', 0), ('rack-2', 0), ('rack-1', 1))
    run(scratch, 'group', 'add', group, *first)
    printed = run(scratch, 'group', 'show', group).stdout
    assert printed.index('root_provider') < printed.index('| domain')
    assert ['domain', 'members', 'bar'] in services.table(printed)
    assert domain_rows(printed) == {'rack-1': ['2', '##'],
                                    'rack-2': ['1', '#']}
    assert 'rule 0: spread at %s: skew 1, satisfied yes\n' % racks.name \
        in printed
    shown = as_json(scratch, 'group', 'show', group)
    assert shown['rules'] == [{'policy': 'spread', 'scope': racks.name,
                               'max_skew': 1, 'min_domains': None,
                               'enforcement': 'hard',
                               'consumer_types': None}]
    assert shown['domains'] == [{'rule': 0, 'skew': 1, 'satisfied': True,
                                 'counts': {'rack-1': 2, 'rack-2': 1}}]
    # A third member in rack-1 would make the skew 2.
    extra, = racks.members(('rack-1', 0))
    assert 'group.policy_violation' in refused(scratch, 'group', 'add',
                                               group, extra)
    run(scratch, 'group', 'delete', group)


def test_group_update_replaces_the_rules_under_the_generation(racks,
                                                              scratch):
    group = str(uuid.uuid4())
    made = as_json(scratch, 'group', 'create', '--uuid', group, '--name',
                   'update', '--policy', 'soft-anti-affinity')
    run(scratch, 'group', 'add', group,
        *racks.members(('rack-1', 0), ('rack-1', 1), ('rack-2', 0)))
    generation = as_json(scratch, 'group', 'show', group)['generation']
    assert generation > made['generation']
    rule = 'policy=anti-affinity,scope=%s' % racks.name
    assert 'group.generation_conflict' in refused(
        scratch, 'group', 'update', group, '--generation',
        str(made['generation']), '--rule', rule)
    # Two members share rack-1: a hard rule they break needs --force.
    assert 'group.policy_violation' in refused(
        scratch, 'group', 'update', group, '--generation', str(generation),
        '--rule', rule)
    updated = as_json(scratch, 'group', 'update', group, '--generation',
                      str(generation), '--rule', rule, '--force')
    assert updated['generation'] == generation + 1
    assert updated['policy'] is None
    assert [r['scope'] for r in updated['rules']] == [racks.name]
    printed = run(scratch, 'group', 'show', group).stdout
    assert domain_rows(printed) == {'rack-1': ['2', '##'],
                                    'rack-2': ['1', '#']}
    assert 'rule 0: anti-affinity at %s: satisfied no\n' % racks.name \
        in printed
    assert 'skew' not in printed
    listed = services.table(run(scratch, 'group', 'list').stdout)
    assert [row[2] for row in listed if row[0] == group] == [
        'anti-affinity at %s' % racks.name]
    run(scratch, 'group', 'delete', group)


def test_several_rules_and_consumer_types(racks, scratch):
    group = str(uuid.uuid4())
    made = as_json(
        scratch, 'group', 'create', '--uuid', group, '--name', 'types',
        '--rule', 'policy=anti-affinity,scope=%s,max_per_domain=2,'
                  'consumer_types=INSTANCE+VOLUME' % racks.name,
        '--rule', 'policy=affinity,enforcement=soft')
    assert made['rules'] == [
        {'policy': 'anti-affinity', 'scope': racks.name,
         'max_per_domain': 2, 'enforcement': 'hard',
         'consumer_types': ['INSTANCE', 'VOLUME']},
        {'policy': 'affinity', 'scope': 'root', 'max_domains': 1,
         'enforcement': 'soft', 'consumer_types': None}]
    printed = run(scratch, 'group', 'show', group).stdout
    assert 'rule 0: anti-affinity at %s: satisfied yes' % racks.name \
        in printed
    assert 'rule 1: affinity at root: satisfied yes' in printed
    run(scratch, 'group', 'delete', group)


def test_a_level_a_rule_names_cannot_be_deleted(racks, scratch):
    name = new_level('site')
    run(scratch, 'topology', 'set', name, '%s=site-1' % racks.aggregates[0])
    group = str(uuid.uuid4())
    run(scratch, 'group', 'create', '--uuid', group, '--name', 'site',
        '--rule', 'policy=affinity,scope=%s' % name)
    error = refused(scratch, 'topology', 'delete', name)
    assert 'topology.in_use' in error and group in error
    run(scratch, 'group', 'delete', group)
    assert name in run(scratch, 'topology', 'delete', name).stdout
    assert 'topology.not_found' in refused(scratch, 'topology', 'show', name)
    assert 'topology.not_found' in refused(scratch, 'topology', 'delete',
                                           name)


@pytest.mark.parametrize('rule, reason', [
    ('policy=spread,scope', "'scope' is not KEY=VALUE"),
    ('policy=spread,,max_skew=1', "'' is not KEY=VALUE"),
    ('policy=spread,max_skew=x', "max_skew must be an integer, not 'x'"),
    ('policy=spread,colour=red', 'unknown key colour'),
    ('policy=spread,policy=affinity', 'policy is given twice'),
    ('scope=root', 'policy=anti-affinity|affinity|spread is required'),
    ('policy=anti-affinity,consumer_types=INSTANCE+',
     'consumer_types must be TYPE[+TYPE...]'),
])
def test_bad_rule_text_is_refused_in_one_line(database, scratch, rule,
                                              reason):
    group = str(uuid.uuid4())
    error = refused(scratch, 'group', 'create', '--uuid', group, '--name',
                    'bad', '--rule', 'policy=affinity', '--rule', rule)
    assert error.startswith('error: --rule %r: ' % rule), error
    assert reason in error, error
    error = refused(scratch, 'group', 'update', group, '--generation', '0',
                    '--rule', rule)
    assert error.startswith('error: --rule %r: ' % rule), error
    assert 'group.not_found' in refused(scratch, 'group', 'show', group)


def test_rules_the_service_layer_refuses(database, scratch):
    group = str(uuid.uuid4())
    create = ('group', 'create', '--uuid', group, '--name', 'bad')
    for rule, detail in (
            ('policy=sideways', 'rules[0].policy must be one of'),
            ('policy=spread,max_domains=2', 'does not apply to spread'),
            ('policy=spread,scope=%s' % new_level('none'),
             'topology.not_found')):
        error = refused(scratch, *(create + ('--rule', rule)))
        assert detail in error, error
    error = refused(scratch, *(create + ('--rule', 'policy=spread',
                                         '--max-per-root', '2')))
    assert 'not both' in error, error
    # --policy and --rule, or neither: a usage error.
    both = run(scratch, *(create + ('--rule', 'policy=spread', '--policy',
                                    'affinity')), check=False)
    assert both.returncode == 2 and 'not allowed with' in both.stderr
    neither = run(scratch, *create, check=False)
    assert neither.returncode == 2
    assert 'one of the arguments --policy --rule is required' in \
        neither.stderr
    assert 'group.not_found' in refused(scratch, 'group', 'show', group)


def test_bad_topology_arguments_are_refused(database, scratch):
    name = new_level('rack')
    aggregate = str(uuid.uuid4())
    for args, detail in (
            ([name, 'no-label'], "'no-label' is not AGGREGATE=LABEL"),
            ([name, aggregate + '='], 'is not AGGREGATE=LABEL'),
            ([name, aggregate + '=a', aggregate + '=b'],
             'is given two labels'),
            (['root', aggregate + '=a'], 'reserved'),
            ([name, 'not-a-uuid=a'], 'invalid_request')):
        assert detail in refused(scratch, 'topology', 'set', *args)
    assert 'topology.not_found' in refused(scratch, 'topology', 'show', name)


def test_bars_scale_to_forty_characters():
    assert output.count_bar(3, 3) == '###'
    assert output.count_bar(0, 3) == ''
    assert output.count_bar(80, 80) == '#' * 40
    assert output.count_bar(20, 80) == '#' * 10
    assert output.count_bar(1, 1000) == '#'
