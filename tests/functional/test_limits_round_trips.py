"""What project limits cost a judged allocate on PostgreSQL in round
trips: none. Its projects are locked and their usage read in the round
trip that reads its providers' capacity (``db.quota``
``capacity_and_locked_usage``), so a single allocate with limits on
talks to the database as often as one with limits off, and is still
judged by them."""

import uuid

import pytest
import sqlalchemy as sa

from allocworker.conf import CONF
from allocworker.db import api as db
from tests.functional.helpers import assert_fault
from tests.functional.test_limits_rule import allocate, call, item
from tests.functional.test_limits_rule import host, keystone  # noqa: F401

BACKENDS = ['postgresql']
pytestmark = pytest.mark.usefixtures('service_layer')


class RoundTrips(object):
    """Statements this process sends to the database meanwhile (each
    cursor execution is one round trip, several statements or one)."""

    def __enter__(self):
        self.count = 0
        self.engine = db.get_engine()
        sa.event.listen(self.engine, 'before_cursor_execute', self._seen)
        return self

    def _seen(self, *args):
        self.count += 1

    def __exit__(self, *exc):
        sa.event.remove(self.engine, 'before_cursor_execute', self._seen)


def round_trips(items):
    with RoundTrips() as seen:
        answer = allocate(items)
    return seen.count, answer


def test_a_judged_single_allocate_costs_no_round_trip_more(
        keystone, host):  # noqa: F811
    project = str(uuid.uuid4())
    keystone.registered = {'class:VCPU': 4}
    keystone.refresh()
    # The project's lock row is made by its first judged write; the
    # second reads its counts and names their classes (standard ones
    # are then remembered by the process).
    for _ in range(2):
        assert allocate([item(str(uuid.uuid4()), 1, project, rp=host)])[0][
            'status'] == 200
    judged, answer = round_trips([item(str(uuid.uuid4()), 1, project,
                                       rp=host)])
    assert answer[0]['status'] == 200, answer
    CONF.set_override('driver', 'noop', 'quota')
    try:
        free, answer = round_trips([item(str(uuid.uuid4()), 1, project,
                                         rp=host)])
    finally:
        CONF.set_override('driver', 'unified_limits', 'quota')
    assert answer[0]['status'] == 200, answer
    assert judged == free, (judged, free)
    # The same one round trip still judged it: the project holds 4 of 4.
    assert_fault(allocate([item(str(uuid.uuid4()), 1, project, rp=host)])[0],
                 403, 'quota.exceeded')


def test_a_judged_batch_over_many_projects_costs_no_round_trip_more(
        keystone, host):  # noqa: F811
    projects = [str(uuid.uuid4()) for _ in range(12)]
    keystone.registered = {'class:VCPU': 100}
    keystone.refresh()

    def batch():
        return [item(str(uuid.uuid4()), 1, p, rp=host) for p in projects]

    for _ in range(2):
        assert all(i['status'] == 200 for i in allocate(batch()))
    judged, answer = round_trips(batch())
    assert all(i['status'] == 200 for i in answer), answer
    CONF.set_override('driver', 'noop', 'quota')
    try:
        free, answer = round_trips(batch())
    finally:
        CONF.set_override('driver', 'unified_limits', 'quota')
    assert all(i['status'] == 200 for i in answer), answer
    assert judged == free, (judged, free)
    assert {p: call('get_limits', project_id=p)['items'][0]['usage']
            for p in projects} == dict.fromkeys(projects, 4)
