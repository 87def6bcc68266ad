"""Claims (RPC 1.3) with one field made wrong, drawn by hypothesis: the
bad item answers 400 and writes nothing, the good item beside it is
placed, on every backend."""

import json
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pytest

from tests.functional.helpers import usage
from tests.functional.test_claims import (claim_item, held, hosts,
                                          slot_class, wanting)


JUNK = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8),
                 st.lists(st.integers(), max_size=2),
                 st.dictionaries(st.text(max_size=4), st.integers(),
                                 max_size=2))


def _mutations():
    """(field path, strategy of values that are wrong there); SLOT
    stands for the test's resource class."""
    not_list = JUNK.filter(lambda v: not isinstance(v, list))
    not_dict = JUNK.filter(lambda v: not isinstance(v, dict))
    not_uuid = st.text(max_size=12) | st.integers()
    return [
        (('consumer_uuid',), not_uuid),
        (('consumer_generation',), st.integers(max_value=-1) | st.text()),
        (('project_id',), JUNK.filter(lambda v: not isinstance(v, str) or
                                      not v)),
        (('request',), not_dict),
        (('request', 'groups'), not_list | st.just([])),
        (('request', 'group_policy'), JUNK.filter(
            lambda v: v not in ('none', 'isolate'))),
        (('request', 'same_subtree'), not_list | st.just([[5]])),
        (('request', 'root_required'), not_list | st.just(['not a trait'])),
        (('request', 'surprise'), JUNK),
        (('request', 'groups', 0, 'resources'), not_dict | st.just({})),
        (('request', 'groups', 0, 'resources', 'SLOT'),
         st.integers(max_value=0) | st.text() | st.floats()),
        (('request', 'groups', 0, 'resources', 'lower_case'),
         st.integers(min_value=1)),
        (('request', 'groups', 0, 'required'),
         not_list | st.just(['!']) | st.just(['in:'])),
        (('request', 'groups', 0, 'member_of'),
         not_list | st.lists(not_uuid.map(str), min_size=1, max_size=2)),
        (('request', 'groups', 0, 'in_tree'), not_uuid.filter(
            lambda v: v is not None)),
        (('strategy',), JUNK.filter(lambda v: v not in ('spread', 'pack'))),
        (('exclude_roots',), not_list | st.lists(not_uuid, min_size=1,
                                                 max_size=2)),
        (('allocations',), JUNK),
    ]


MUTATIONS = _mutations()


def _with(item, path, value):
    item = json.loads(json.dumps(item))
    at = item
    for step in path[:-1]:
        at = at[step]
    at[path[-1]] = value
    return item


@pytest.fixture(scope='module')
def bad_request_host(rpc):
    name = slot_class(rpc)
    return name, hosts(rpc, name, 1, 1000)[0]


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_bad_claims_get_400_items_and_write_nothing(rpc, bad_request_host,
                                                    data):
    name, host = bad_request_host
    path, values = data.draw(st.sampled_from(MUTATIONS))
    path = tuple(name if step == 'SLOT' else step for step in path)
    good = claim_item(str(uuid.uuid4()), wanting(name))
    bad = _with(claim_item(str(uuid.uuid4()), wanting(name)), path,
                data.draw(values))
    before = usage(rpc, host)[name]
    answer = rpc.claim(items=[bad, good])
    assert answer['status'] == 207, answer
    refused, placed = answer['items']
    assert refused['status'] == 400, (path, refused)
    assert refused['code'] in ('invalid_request', 'resource_class.not_found')
    assert isinstance(refused['detail'], str) and refused['detail']
    assert placed['status'] == 200, placed
    assert usage(rpc, host)[name] == before + 1
    if path != ('consumer_uuid',):
        assert held(rpc, bad['consumer_uuid']) is None
