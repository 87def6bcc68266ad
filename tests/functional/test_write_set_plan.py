"""PostgreSQL's one-statement write set (db/writes_pg.py, prepared by
db/prepared.py) is prepared again every REPLAN_SECONDS on a connection,
so a generic plan made while the tables were small does not outlive
their growth."""

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
