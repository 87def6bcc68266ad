"""Placement's HTTP API under concurrent clients, through two
allocworker-api processes on one database: the books stay right whichever
entry point the writes come through."""

import os
import subprocess
import threading
import uuid

import pytest

from tests.functional import jsonhttp
from tests.functional import services

BACKENDS = ['postgresql', 'mysql']
CLIENTS = 24


class Placement(object):
    def __init__(self, bases):
        self.bases = bases

    def call(self, method, path, body=None, version='1.28', server=0):
        return jsonhttp.call(
            self.bases[server % len(self.bases)] + path, method, body,
            jsonhttp.placement_headers(version), timeout=120)


@pytest.fixture(scope='module')
def placement(database, scratch):
    servers, bases = [], []
    for n in range(2):
        port = services.free_port()
        config = services.write_config(
            '%s/api%d.conf' % (scratch, n), database, 'unused',
            extra='[api]\nauth_strategy = noauth2\nport = %d\n' % port)
        servers.append(subprocess.Popen(
            [os.path.join(services.BIN, 'allocworker-api'),
             '--config-file', config], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))
        bases.append('http://127.0.0.1:%d' % port)
    for base in bases:
        services.wait_for_http(base)
    yield Placement(bases)
    for server in servers:
        server.terminate()
        server.wait(30)


def in_parallel(fn, count):
    results = [None] * count
    start = threading.Barrier(count)

    def run(n):
        start.wait()
        results[n] = fn(n)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def provider(placement, vcpus):
    rp = str(uuid.uuid4())
    assert placement.call('POST', '/resource_providers',
                          {'name': 'rp-' + rp, 'uuid': rp})[0] == 200
    status, _ = placement.call('PUT', '/resource_providers/%s/inventories'
                               % rp, {'resource_provider_generation': 0,
                                      'inventories': {
                                          'VCPU': {'total': vcpus}}})
    assert status == 200
    return rp


def test_no_capacity_overrun_from_concurrent_puts(placement, scratch):
    rp = provider(placement, 10)

    def claim(n):
        return placement.call('PUT', '/allocations/%s' % uuid.uuid4(), {
            'allocations': {rp: {'resources': {'VCPU': 1}}},
            'project_id': 'p', 'user_id': 'u',
            'consumer_generation': None}, server=n)[0]

    statuses = in_parallel(claim, CLIENTS)
    assert statuses.count(204) == 10, statuses
    assert set(statuses) == {204, 409}, statuses
    _, usages = placement.call('GET', '/resource_providers/%s/usages' % rp)
    assert usages['usages'] == {'VCPU': 10}
    assert services.manage('%s/sync.conf' % scratch, 'audit').returncode == 0


def test_writes_without_generations_are_never_lost(placement):
    """Before 1.28 a PUT carries no consumer generation: the shim reads the
    current one and writes under it, so concurrent writers are serialized
    and every write that answers 204 counts once."""
    rp = provider(placement, 1000)
    consumer = str(uuid.uuid4())

    def write(n):
        return placement.call('PUT', '/allocations/%s' % consumer, {
            'allocations': {rp: {'resources': {'VCPU': n + 1}}},
            'project_id': 'p', 'user_id': 'u'}, version='1.20',
            server=n)[0]

    statuses = in_parallel(write, 12)
    assert set(statuses) <= {204, 409}, statuses
    _, now = placement.call('GET', '/allocations/%s' % consumer)
    assert now['consumer_generation'] == statuses.count(204)
    assert now['allocations'][rp]['resources']['VCPU'] in range(1, 13)


def test_one_inventory_write_per_generation(placement):
    rp = provider(placement, 4)

    def resize(n):
        return placement.call(
            'PUT', '/resource_providers/%s/inventories' % rp,
            {'resource_provider_generation': 1,
             'inventories': {'VCPU': {'total': 5 + n}}}, server=n)[0]

    statuses = in_parallel(resize, 8)
    assert statuses.count(200) == 1 and statuses.count(409) == 7, statuses
    _, inventories = placement.call('GET', '/resource_providers/%s/'
                                    'inventories' % rp)
    assert inventories['resource_provider_generation'] == 2
