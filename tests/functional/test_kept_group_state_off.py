"""``[scheduling] keep_group_state = false``, as while workers of an
earlier release share the database: members and roots' domains are read
in every transaction, so a member moved, or a host re-labelled, without
moving the tokens (as an earlier release's worker does; done here in
SQL) is judged where it is. This process is the worker, on every
backend; with the option on it would judge from what it kept."""

import uuid

from oslo_context import context
import pytest
import sqlalchemy as sa

from allocworker import calls
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db import schema
from tests.functional.domains import Racks, claim, group_of
from tests.functional.helpers import assert_fault

pytestmark = pytest.mark.usefixtures('service_layer')
ADMIN = context.RequestContext(roles=['admin'], project_id='admin',
                               user_id='u', is_admin=True)


class InProcess(object):
    """The calls of this process's service layer, as a client makes them."""

    def call(self, method, rpc_timeout=None, **kwargs):
        return calls.answer(ADMIN, method, kwargs)

    def __getattr__(self, method):
        return lambda **kwargs: self.call(method, **kwargs)


@pytest.fixture
def keeping_off():
    CONF([], project='allocworker', default_config_files=[])
    CONF.set_override('keep_group_state', False, 'scheduling')
    yield
    CONF.clear_override('keep_group_state', 'scheduling')


def in_sql(statement):
    with db.get_engine().begin() as conn:
        conn.execute(statement)


def provider_id(uuid_):
    p = schema.providers
    return sa.select(p.c.id).where(p.c.uuid == uuid_).scalar_subquery()


def placed_pair(rpc):
    """Two racks of one host each, a group of one member per rack, and
    its first member: (racks, group, member, its host, the other host)."""
    racks = Racks(rpc, racks=2, per_rack=1)
    group_uuid = group_of(rpc, [{'policy': 'anti-affinity',
                                 'scope': racks.rack_level}])
    member = str(uuid.uuid4())
    first = claim(rpc, member, racks.request(), group_uuid)
    assert first['status'] == 200, first
    other = next(h for h in racks.hosts if h != first['root_uuid'])
    return racks, group_uuid, member, first['root_uuid'], other


def test_a_member_moved_without_its_token_is_judged_where_it_is(
        keeping_off):
    rpc = InProcess()
    racks, group_uuid, member, host, other = placed_pair(rpc)
    a, c = schema.allocations, schema.consumers
    in_sql(sa.update(a).where(a.c.consumer_id == sa.select(c.c.id).where(
        c.c.uuid == member).scalar_subquery()).values(
            provider_id=provider_id(other)))
    second = claim(rpc, str(uuid.uuid4()), racks.request(), group_uuid)
    assert second['status'] == 200, second
    assert second['root_uuid'] == host


def test_a_host_relabelled_without_the_epoch_is_judged_where_it_is(
        keeping_off):
    rpc = InProcess()
    racks, group_uuid, _member, host, other = placed_pair(rpc)
    pa = schema.provider_aggregates
    # The member's host moves into the other host's rack: no rack is
    # left without a member.
    in_sql(sa.update(pa).where(
        pa.c.provider_id == provider_id(host),
        pa.c.aggregate_uuid == racks.rack_aggregates[racks.hosts[host]])
        .values(aggregate_uuid=racks.rack_aggregates[racks.hosts[other]]))
    assert_fault(claim(rpc, str(uuid.uuid4()), racks.request(), group_uuid),
                 409, 'group.policy_violation')
