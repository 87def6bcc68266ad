"""Fixtures: one fresh database and one running worker per backend and
test module, shared by that module's tests (which use fresh uuids)."""

import uuid

import pytest

from allocworker.conf import CONF
from allocworker.db import api as db
from tests.functional import keystone as keystone_service
from tests.functional import placement_cloud
from tests.functional import services


def pytest_generate_tests(metafunc):
    if 'backend' in metafunc.fixturenames:
        backends = getattr(metafunc.module, 'BACKENDS', services.BACKENDS)
        metafunc.parametrize('backend', backends, scope='module')


@pytest.fixture(scope='module', autouse=True)
def broker_clients_closed():
    """Each module's clients close their broker connections when it ends
    (after its other fixtures, set up after this one, are torn down)."""
    yield
    services.close_clients()


@pytest.fixture(scope='module')
def scratch(tmp_path_factory):
    return str(tmp_path_factory.mktemp('aw'))


@pytest.fixture(scope='module')
def database(backend, scratch):
    """A synced database URL on ``backend`` (via allocworker-manage)."""
    with services.fresh_database(backend, scratch) as url:
        config = services.write_config('%s/sync.conf' % scratch, url,
                                       'unused')
        services.manage(config, 'db', 'sync')
        yield url


@pytest.fixture(scope='module')
def service_layer(database):
    """This process configured to call the service layer directly."""
    CONF.set_override('connection', database, 'database')
    db.configure(CONF)
    yield
    CONF.clear_override('connection', 'database')


@pytest.fixture(scope='module')
def worker_count():
    return 3


@pytest.fixture(scope='module')
def topic():
    return 'aw-test-%s' % uuid.uuid4().hex[:8]


@pytest.fixture(scope='module')
def rpc(request, database, scratch, topic, worker_count):
    """A bare oslo.messaging client and the worker processes it talks to."""
    config = services.write_config(
        '%s/worker.conf' % scratch, database, topic, workers=worker_count,
        extra=getattr(request.module, 'WORKER_CONFIG', '').format(
            topic=topic))
    client = services.BareClient(topic)
    worker = services.Worker(config).start(client)
    client.worker = worker
    yield client
    assert worker.stop() == 0


@pytest.fixture(scope='module')
def shim(database, scratch):
    """allocworker-api on the module's database, and a Placement API
    client of it (``placement_cloud.Api``)."""
    server, port = services.start_api(database, scratch)
    yield placement_cloud.Api('http://127.0.0.1:%d' % port)
    server.kill()
    server.wait()


@pytest.fixture(scope='module')
def keystone(tmp_path_factory):
    """A real Keystone (tools/keystone.sh) with default limits of 1000
    VCPU and 1000 servers registered for allocworker's service."""
    found = keystone_service.Keystone(
        str(tmp_path_factory.mktemp('keystone'))).start()
    found.registered_limit('class:VCPU', 1000)
    found.registered_limit('servers', 1000)
    yield found
    found.stop()


@pytest.fixture(scope='module')
def limited_rpc(request, database, scratch, topic, keystone, worker_count):
    """As ``rpc``, with workers judging by ``keystone``'s limits."""
    limits = keystone_service.WORKER_CONFIG.format(stale_seconds=getattr(
        request.module, 'STALE_SECONDS', 60))
    config = services.write_config(
        '%s/worker.conf' % scratch, database, topic, workers=worker_count,
        extra=limits + keystone.oslo_limit_config())
    client = services.BareClient(topic)
    worker = services.Worker(config).start(client)
    yield client
    assert worker.stop() == 0


@pytest.fixture
def ids():
    return _Ids()


class _Ids(object):
    """Fresh uuids and names per test, so tests sharing a database never
    see each other's objects. Not thread-safe: take a name's uuid before
    handing it to threads."""

    def __getattr__(self, name):
        value = str(uuid.uuid4())
        setattr(self, name, value)
        return value
