"""A real Placement 16.0.0 (from PyPI, in ``.venv-placement`` as the
benchmarks install it) on a fresh database, and a small cloud written
over its own HTTP API that touches every table of its schema."""

import contextlib
import json
import os
import subprocess
import time
import uuid

from benchmarks import peers
from tests.functional import jsonhttp
from tests.functional import services

SERVER = os.path.join(peers.ROOT, 'benchmarks', 'placement_server.py')


class Api(object):
    """A Placement-API endpoint, called as a client would (noauth2)."""

    def __init__(self, base):
        self.base = base

    def call(self, method, path, body=None, version='1.39', expect=None):
        status, raw = jsonhttp.request(
            self.base + path, method, body,
            jsonhttp.placement_headers(version))
        if (status not in expect) if expect else not 200 <= status < 300:
            raise AssertionError('%s %s%s: %d %s' % (
                method, self.base, path, status, raw[:400]))
        return json.loads(raw) if raw else None

    def generation(self, provider):
        return self.call('GET', '/resource_providers/%s' % provider)[
            'generation']

    def consumer(self, consumer):
        return self.call('GET', '/allocations/%s' % consumer)

    def allocate(self, consumer, allocations, project='p1', user='u1',
                 kind='INSTANCE', version='1.38'):
        body = {'allocations': {p: {'resources': r}
                                for p, r in allocations.items()},
                'project_id': project, 'user_id': user,
                'consumer_generation': self.consumer(consumer).get(
                    'consumer_generation')}
        if version >= '1.38':
            body['consumer_type'] = kind
        self.call('PUT', '/allocations/%s' % consumer, body, version=version)

    def provider(self, name, inventories, parent=None, traits=(),
                 aggregates=()):
        uuid_ = str(uuid.uuid4())
        body = {'uuid': uuid_, 'name': name}
        if parent:
            body['parent_provider_uuid'] = parent
        self.call('POST', '/resource_providers', body)
        self.call('PUT', '/resource_providers/%s/inventories' % uuid_,
                  {'resource_provider_generation': 0,
                   'inventories': inventories})
        if traits:
            self.call('PUT', '/resource_providers/%s/traits' % uuid_,
                      {'resource_provider_generation': self.generation(uuid_),
                       'traits': list(traits)})
        if aggregates:
            self.call('PUT', '/resource_providers/%s/aggregates' % uuid_,
                      {'resource_provider_generation': self.generation(uuid_),
                       'aggregates': list(aggregates)})
        return uuid_


@contextlib.contextmanager
def placement(backend, scratch):
    """(Placement's database URL, its Api) on a fresh database."""
    venv_bin = peers.placement_bin()
    with services.fresh_database(backend, scratch) as url:
        folder = os.path.join(scratch, 'placement-%s' % backend)
        os.makedirs(folder, exist_ok=True)
        port = services.free_port()
        log = open(os.path.join(folder, 'server.log'), 'w')
        server = subprocess.Popen(
            [os.path.join(venv_bin, 'python'), SERVER, str(port), url,
             folder], stdout=log, stderr=subprocess.STDOUT)
        try:
            services.wait_for_http('http://127.0.0.1:%d' % port, 120)
            yield url, Api('http://127.0.0.1:%d' % port)
        finally:
            server.terminate()
            server.wait(30)
            log.close()


def fill(api):
    """The cloud; {name: uuid} of what the tests look at again."""
    api.call('PUT', '/resource_classes/CUSTOM_MAGIC', version='1.7')
    api.call('PUT', '/traits/CUSTOM_FAST')
    aggregate = str(uuid.uuid4())
    cloud = {'aggregate': aggregate}
    for n in (1, 2):
        host = api.provider('host%d' % n, {
            'MEMORY_MB': {'total': 4096, 'reserved': 512},
            'CUSTOM_MAGIC': {'total': 4, 'max_unit': 2}},
            traits=['HW_CPU_X86_AVX2', 'CUSTOM_FAST'],
            aggregates=[aggregate])
        cloud['host%d' % n] = host
        for numa in (0, 1):
            cloud['host%d-numa%d' % (n, numa)] = api.provider(
                'host%d-numa%d' % (n, numa), {
                    'VCPU': {'total': 8, 'allocation_ratio': 4.0,
                             'step_size': 1},
                    'PCPU': {'total': 4, 'min_unit': 1}}, parent=host,
                traits=['HW_NUMA_ROOT'])
    cloud['shared'] = api.provider(
        'shared-disk', {'DISK_GB': {'total': 1000, 'step_size': 10}},
        traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[aggregate])
    cloud['empty'] = api.provider('no-inventory', {})
    h1, h2 = cloud['host1'], cloud['host2']
    c = {name: str(uuid.uuid4()) for name in (
        'vm', 'migration', 'moved', 'cleared', 'untyped', 'big')}
    cloud.update(c)
    api.allocate(c['vm'], {cloud['host1-numa0']: {'VCPU': 2},
                           h1: {'MEMORY_MB': 1024, 'CUSTOM_MAGIC': 2},
                           cloud['shared']: {'DISK_GB': 100}})
    api.allocate(c['vm'], {cloud['host1-numa0']: {'VCPU': 4},
                           h1: {'MEMORY_MB': 1024, 'CUSTOM_MAGIC': 2},
                           cloud['shared']: {'DISK_GB': 100}})
    api.allocate(c['migration'], {cloud['host2-numa1']: {'PCPU': 2}},
                 project='p2', user='u2', kind='MIGRATION')
    api.allocate(c['moved'], {h1: {'MEMORY_MB': 512}}, project='p2')
    api.allocate(c['moved'], {h2: {'MEMORY_MB': 512}}, project='p2')
    api.allocate(c['cleared'], {h1: {'MEMORY_MB': 256}})
    api.allocate(c['cleared'], {})
    api.allocate(c['untyped'], {h2: {'CUSTOM_MAGIC': 1}}, user='u3',
                 version='1.28')
    api.allocate(c['big'], {h2: {'MEMORY_MB': 3000}}, project='p3')
    # The host loses memory: Placement lets inventory shrink below usage.
    # (A second later, so the newest timestamp is this provider's alone.)
    time.sleep(1.1)
    api.call('PUT', '/resource_providers/%s/inventories/MEMORY_MB' % h2,
             {'resource_provider_generation': api.generation(h2),
              'total': 2048, 'reserved': 0})
    time.sleep(1.1)  # later writes carry a later timestamp (MySQL: seconds)
    return cloud
