"""Notifications of groups and topology levels (RPC 1.5) over a real
RabbitMQ: a listener on the notification topic sees each committed
change of a group's rules or members and of a level's domains."""

import uuid

import pytest

from tests.functional.domains import Racks, group_of
from tests.functional.helpers import allocate, one
from tests.functional.test_events import _Collector, notices  # noqa: F401

WORKER_CONFIG = '''
[oslo_messaging_notifications]
driver = messagingv2
topics = {topic}-notifications
'''

pytestmark = pytest.mark.usefixtures('notices')


def test_group_changes_are_notified(rpc, notices):  # noqa: F811
    racks = Racks(rpc, racks=2, per_rack=1)
    seen = notices.wait_for('allocworker.topology.changed',
                            lambda p: p['name'] == racks.rack_level)
    assert sorted(seen['domains'].values()) == ['rack-0', 'rack-1']
    rules = [{'policy': 'spread', 'scope': racks.rack_level}]
    group_uuid = group_of(rpc, rules)
    created = notices.wait_for('allocworker.group.changed',
                               lambda p: p['uuid'] == group_uuid)
    assert created['change'] == 'created' and created['members'] == 0
    assert created['rules'][0]['policy'] == 'spread'
    host = next(iter(racks.hosts))
    assert allocate(rpc, str(uuid.uuid4()), {host: {'VCPU': 1}},
                    group_uuid=group_uuid)['status'] == 200
    generation = one(rpc.get_groups(uuids=[group_uuid]))['generation']
    member = str(uuid.uuid4())
    assert one(rpc.add_members(group_uuid=group_uuid,
                               consumer_uuids=[member]))['status'] == 200
    changed = notices.wait_for(
        'allocworker.group.changed',
        lambda p: p['uuid'] == group_uuid and p['change'] == 'members')
    assert changed['members'] == 2 and changed['generation'] > generation
    item = one(rpc.update_group(uuid=group_uuid,
                                generation=changed['generation'],
                                rules=[{'policy': 'anti-affinity'}]))
    assert item['status'] == 200, item
    updated = notices.wait_for(
        'allocworker.group.changed',
        lambda p: p['uuid'] == group_uuid and p['change'] == 'rules')
    assert updated['rules'][0]['policy'] == 'anti-affinity'
    assert one(rpc.delete_group(uuid=group_uuid))['status'] == 200
    deleted = notices.wait_for(
        'allocworker.group.changed',
        lambda p: p['uuid'] == group_uuid and p['change'] == 'deleted')
    assert deleted['generation'] is None
