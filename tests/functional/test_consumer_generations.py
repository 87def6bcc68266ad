"""Where a consumer's generation starts (db/generations.py's rule), on
every backend: above the last generation its uuid was retired at and
above the '*' floor, never below 1, for one item and for several new
consumers written in one transaction. Through the service layer, on this
module's own database (the floor it sets would move every other test's
consumers)."""

import uuid

import pytest
import sqlalchemy as sa

from allocworker.allocations import writes as allocations
from allocworker.providers import rules as providers

pytestmark = pytest.mark.usefixtures('service_layer')


@pytest.fixture(scope='module')
def host(service_layer):
    provider_uuid = str(uuid.uuid4())
    item, = providers.create_provider(None, provider_uuid,
                                      'rp-' + provider_uuid)
    item, = providers.set_inventories(None, provider_uuid,
                                      item['generation'],
                                      {'VCPU': {'total': 1000}})
    assert item['status'] == 200, item
    return provider_uuid


def _items(host, consumers, amount=1):
    """{consumer_uuid: generation} -> allocate items."""
    return [{'consumer_uuid': consumer, 'consumer_generation': generation,
             'project_id': 'p', 'user_id': 'u',
             'allocations': {host: {'VCPU': amount}} if amount else {}}
            for consumer, generation in consumers.items()]


def _write(host, consumers, amount=1, atomic=False):
    """{consumer_uuid: generation it answers with}."""
    answered = allocations.allocate(None, _items(host, consumers, amount),
                                    atomic)
    for item in answered:
        assert item['status'] == 200, item
    return {item['consumer_uuid']: item['consumer_generation']
            for item in answered}


def _retire(database, generations):
    """Store retired consumer generations {uuid: generation} as an
    upgraded database or a deletion would have left them."""
    engine = sa.create_engine(database, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            for consumer, generation in generations.items():
                conn.execute(sa.text(
                    "DELETE FROM retired_generations WHERE kind = "
                    "'consumer' AND uuid = :uuid"), {'uuid': consumer})
                conn.execute(sa.text(
                    "INSERT INTO retired_generations (kind, uuid, "
                    "generation) VALUES ('consumer', :uuid, :generation)"),
                    {'uuid': consumer, 'generation': generation})
    finally:
        engine.dispose()


def test_deleted_consumer_comes_back_above_its_last_generation(host):
    consumer = str(uuid.uuid4())
    assert _write(host, {consumer: None}) == {consumer: 1}
    assert _write(host, {consumer: 1}, amount=2) == {consumer: 2}
    assert _write(host, {consumer: 2}, amount=0) == {consumer: None}
    assert _write(host, {consumer: None}) == {consumer: 3}
    assert _write(host, {consumer: 3}, amount=0) == {consumer: None}
    # Several consumers in one transaction, each by its own history.
    fresh = str(uuid.uuid4())
    for atomic in (False, True):
        assert _write(host, {consumer: None, fresh: None},
                      atomic=atomic) == {consumer: 4 + atomic,
                                         fresh: 1 + atomic}
        assert _write(host, {consumer: 4 + atomic, fresh: 1 + atomic},
                      amount=0, atomic=atomic) == {consumer: None,
                                                   fresh: None}


def test_new_consumers_start_above_the_floor_and_their_own_past(
        host, database):
    below, above, fresh = (str(uuid.uuid4()) for _ in range(3))
    _retire(database, {below: 10, above: 50, '*': 40})
    assert _write(host, {below: None, above: None, fresh: None}) == {
        below: 41, above: 51, fresh: 41}
    assert _write(host, {below: 41, above: 51, fresh: 41}, amount=0) == {
        below: None, above: None, fresh: None}
    # Their deletion retired 41, 51, 41: the floor no longer decides.
    assert _write(host, {below: None, above: None}, atomic=True) == {
        below: 42, above: 52}
