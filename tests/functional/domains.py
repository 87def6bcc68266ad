"""A small cloud with failure domains, built over RPC 1.5 as a user
would: hosts in racks (aggregates), racks mapped to labels by a topology
level, zones above them."""

import uuid

from tests.functional.helpers import one, provider

HOST_VCPU = 1000


class Racks(object):
    """``racks`` racks of ``per_rack`` hosts; level ``rack`` labels them
    rack-0, rack-1, ...; level ``zone`` puts the first half of the racks
    in zone-a and the rest in zone-b (one aggregate per zone)."""

    def __init__(self, rpc, racks=4, per_rack=4, prefix=None):
        self.rpc = rpc
        self.prefix = prefix or uuid.uuid4().hex[:6]
        self.rack_aggregates = [str(uuid.uuid4()) for _ in range(racks)]
        self.zone_aggregates = [str(uuid.uuid4()), str(uuid.uuid4())]
        self.hosts = {}   # host uuid: rack index
        for rack, aggregate in enumerate(self.rack_aggregates):
            zone = self.zone_aggregates[0 if rack < racks // 2 else 1]
            for _ in range(per_rack):
                host, generation = provider(
                    rpc, {'VCPU': {'total': HOST_VCPU},
                          'MEMORY_MB': {'total': 1 << 20}})
                item = one(rpc.set_provider_aggregates(
                    provider_uuid=host, provider_generation=generation,
                    aggregates=[aggregate, zone]))
                assert item['status'] == 200, item
                self.hosts[host] = rack
        self.rack_level = 'rack-%s' % self.prefix
        self.zone_level = 'zone-%s' % self.prefix
        self.set_level(self.rack_level, {
            a: 'rack-%d' % n for n, a in enumerate(self.rack_aggregates)})
        self.set_level(self.zone_level, {
            self.zone_aggregates[0]: 'zone-a',
            self.zone_aggregates[1]: 'zone-b'})

    def set_level(self, name, domains):
        item = one(self.rpc.set_topology_level(name=name, domains=domains))
        assert item['status'] == 200, item
        return item

    def rack_of(self, host):
        return 'rack-%d' % self.hosts[host]

    def zone_of(self, host):
        return 'zone-a' if self.hosts[host] < len(
            self.rack_aggregates) // 2 else 'zone-b'

    def request(self, vcpu=1):
        """A claim's request that only these hosts can meet."""
        return {'groups': [{'resources': {'VCPU': vcpu},
                            'member_of': ['in:' + ','.join(
                                self.rack_aggregates)]}]}


def group_of(rpc, rules, **extra):
    group_uuid = str(uuid.uuid4())
    item = one(rpc.create_group(uuid=group_uuid, name='g-' + group_uuid,
                                rules=rules, **extra))
    assert item['status'] == 200, item
    return group_uuid


def claim_item(consumer, request, group_uuid=None, **extra):
    item = {'consumer_uuid': consumer, 'consumer_generation': None,
            'project_id': 'test-project', 'user_id': 'test-user',
            'request': request}
    if group_uuid:
        item['group_uuid'] = group_uuid
    item.update(extra)
    return item


def claim(rpc, consumer, request, group_uuid=None, **extra):
    return one(rpc.call('claim', items=[claim_item(
        consumer, request, group_uuid, **extra)], rpc_timeout=120))
