"""The committed sample configuration matches the options in code."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
SAMPLE = os.path.join(ROOT, 'etc', 'allocworker', 'allocworker.conf.sample')


def test_sample_config_is_current(tmp_path):
    fresh = tmp_path / 'sample.conf'
    subprocess.run(
        [os.path.join(os.path.dirname(sys.executable),
                      'oslo-config-generator'),
         '--config-file', os.path.join(ROOT, 'etc', 'allocworker',
                                       'config-generator.conf'),
         '--output-file', str(fresh)],
        check=True, cwd=ROOT, capture_output=True)
    with open(SAMPLE) as committed:
        assert committed.read() == fresh.read_text(), (
            'etc/allocworker/allocworker.conf.sample is stale; run '
            'oslo-config-generator --config-file '
            'etc/allocworker/config-generator.conf')


def test_every_design_option_is_in_the_sample():
    text = open(SAMPLE).read()
    for group, option in [
            ('DEFAULT', 'transport_url'), ('DEFAULT', 'state_path'),
            ('database', 'connection'), ('worker', 'topic'),
            ('worker', 'workers'), ('worker', 'max_batch_items'),
            ('worker', 'idempotency_seconds'),
            ('upgrade_levels', 'allocworker'), ('events', 'hold_seconds'),
            ('events', 'retention_seconds'), ('events', 'allowed_names'),
            ('api', 'host'), ('api', 'port')]:
        section = ('\n' + text).split('\n[%s]\n' % group, 1)[1]
        section = section.split('\n[', 1)[0]
        assert '#%s = ' % option in section, (group, option)


def test_sample_policy_is_current(tmp_path):
    fresh = tmp_path / 'policy.yaml'
    subprocess.run(
        [os.path.join(os.path.dirname(sys.executable),
                      'oslopolicy-sample-generator'),
         '--namespace', 'allocworker', '--output-file', str(fresh)],
        check=True, cwd=ROOT, capture_output=True)
    with open(os.path.join(ROOT, 'etc', 'allocworker',
                           'policy.yaml.sample')) as committed:
        assert committed.read() == fresh.read_text(), (
            'etc/allocworker/policy.yaml.sample is stale; run tox -e '
            'genpolicy')
