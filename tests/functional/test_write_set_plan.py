"""PostgreSQL's prepared statements (db/prepared.py): the one-statement
write set (db/ledger/writes_pg.py) is prepared again every REPLAN_SECONDS on a
connection, so a generic plan made while the tables were small does not
outlive their growth; a claim's search runs its statements prepared
(``prepared.Core``), not planned each time."""

import uuid

from oslo_context import context
import pytest

from allocworker import calls
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db import prepared

BACKENDS = ('postgresql',)
pytestmark = pytest.mark.usefixtures('service_layer')
ADMIN = context.RequestContext(roles=['admin'], project_id='p',
                               user_id='u', is_admin=True)


@pytest.fixture(autouse=True)
def parsed_configuration():
    """The service layer reads options that need parsed arguments (no
    files: the defaults, and the fixture's database override)."""
    CONF([], project='allocworker', default_config_files=[])


def _allocate(rp):
    answer = calls.answer(ADMIN, 'allocate', {'items': [{
        'consumer_uuid': str(uuid.uuid4()), 'consumer_generation': None,
        'project_id': 'p', 'user_id': 'u',
        'allocations': {rp: {'VCPU': 1}}}]})
    assert answer['status'] == 200, answer


def _prepared_at():
    # The kept connection used last is the one handed out next.
    with db.writer() as conn:
        return conn.exec_driver_sql(
            "SELECT prepare_time FROM pg_prepared_statements "
            "WHERE name = 'allocworker_write_set'").scalar()


def test_the_write_set_is_prepared_again_after_replan_seconds(
        monkeypatch):
    rp = str(uuid.uuid4())
    assert calls.answer(ADMIN, 'create_provider',
                        {'uuid': rp, 'name': rp})['status'] == 200
    assert calls.answer(ADMIN, 'set_inventories', {
        'provider_uuid': rp, 'provider_generation': 0,
        'inventories': {'VCPU': {'total': 100}}})['status'] == 200
    _allocate(rp)
    first = _prepared_at()
    assert first is not None
    _allocate(rp)
    assert _prepared_at() == first
    monkeypatch.setattr(prepared, 'REPLAN_SECONDS', 0.0)
    _allocate(rp)
    assert _prepared_at() > first


def _set(method, **args):
    answer = calls.answer(ADMIN, method, args)
    assert answer['status'] == 200, answer
    return answer


def test_a_claims_search_and_try_run_prepared():
    aggregate = str(uuid.uuid4())
    host, pool = str(uuid.uuid4()), str(uuid.uuid4())
    for rp, inventory in ((host, {'VCPU': {'total': 8}}),
                          (pool, {'DISK_GB': {'total': 100}})):
        _set('create_provider', uuid=rp, name=rp)
        _set('set_inventories', provider_uuid=rp, provider_generation=0,
             inventories=inventory)
    from allocworker.providers import aggregates, traits
    for rp, generation in ((host, 1), (pool, 1)):
        item, = aggregates.set_provider_aggregates(None, rp, generation,
                                                   [aggregate])
        assert item['status'] == 200, item
    item, = traits.set_provider_traits(None, pool, 2,
                                       ['MISC_SHARES_VIA_AGGREGATE'])
    assert item['status'] == 200, item
    answer = calls.answer(ADMIN, 'claim', {'items': [{
        'consumer_uuid': str(uuid.uuid4()), 'consumer_generation': None,
        'project_id': 'p', 'user_id': 'u', 'request': {'groups': [{
            'resources': {'VCPU': 1, 'DISK_GB': 1}}]}}]})
    placed = answer['items'][0]
    assert placed['status'] == 200, placed
    assert placed['allocations'] == {host: {'VCPU': 1},
                                     pool: {'DISK_GB': 1}}
    with db.writer() as conn:
        texts = [row[0] for row in conn.exec_driver_sql(
            "SELECT statement FROM pg_prepared_statements "
            "WHERE name LIKE %(core)s", {'core': 'allocworker_core_%'})]
    # The sharing providers' union and the host's own suppliers, the
    # weighing's inventories, the try's lock; not the window's pages
    # (their generic plan was slow on a large cloud).
    assert any('MATERIALIZED' in t for t in texts), texts
    assert any('SKIP LOCKED' in t for t in texts), texts
    assert not any('max(usages.free)' in t for t in texts), texts
    assert len(texts) >= 4, texts
