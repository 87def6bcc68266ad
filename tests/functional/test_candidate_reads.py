"""A listing of allocation candidates reads each fact once: the summaries
are built from what the search read (trees, traits, inventories), and
read only what it did not, with the same answer as a fresh read."""

import uuid

import pytest

from allocworker.db import api as db
from allocworker.db.search import candidates as db_candidates
from allocworker.scheduling import candidates
from allocworker.scheduling import request as request_syntax
from allocworker.scheduling import summaries
from tests.functional.test_candidates import SHARES, custom, provider

pytestmark = pytest.mark.usefixtures('service_layer')


@pytest.fixture(scope='module')
def cloud(service_layer):
    """Three trees of a root (in the aggregate, without inventory) and
    two children, the first with the trait; a sharing provider of the
    other class in the aggregate; a flat host with both classes."""
    cls, other, trait = custom(), custom(), custom('trait')
    agg = str(uuid.uuid4())
    provider({other: 100}, with_traits=[SHARES], aggs=[agg])
    for _ in range(3):
        root = provider(aggs=[agg])
        provider({cls: 4}, root, [trait])
        provider({cls: 4, other: 2}, root)
    provider({cls: 8, other: 8}, with_traits=[trait])
    return cls, other, trait


def shapes(cls, other, trait):
    return {
        'trait_judged': {'groups': [{'resources': {cls: 1, other: 1},
                                     'required': [trait]}]},
        'shared_class': {'groups': [{'resources': {cls: 1, other: 1}},
                                    {'resources': {cls: 1}}]},
        'isolated': {'groups': [{'resources': {other: 1}},
                                {'resources': {cls: 1}},
                                {'resources': {cls: 1}}],
                     'group_policy': 'isolate'},
        'same_subtree': {'groups': [{'resources': {other: 1}},
                                    {'resources': {cls: 1}},
                                    {'resources': {cls: 2}}],
                         'same_subtree': [[1, 2]]},
    }


@pytest.mark.parametrize('shape', ['trait_judged', 'shared_class',
                                   'isolated', 'same_subtree'])
@pytest.mark.parametrize('limit', [None, 1, 5, 1000])
@pytest.mark.parametrize('nested', [True, False])
def test_summaries_from_the_search_are_those_read_afresh(
        cloud, monkeypatch, shape, limit, nested):
    request = request_syntax.parse_request(shapes(*cloud)[shape])
    by_uuid = []
    read = db_candidates.nodes_by_uuid
    monkeypatch.setattr(db_candidates, 'nodes_by_uuid',
                        lambda *args: by_uuid.append(args) or read(*args))
    with db.snapshot() as conn:
        found = candidates.find(request, limit, conn=conn, nested=nested)
        # The search read every provider a candidate uses.
        assert not by_uuid
        fresh = summaries.of_listing(conn, list(found.candidates), nested)
    assert found.candidates or not nested
    assert found.providers == fresh
    assert type(found.candidates) is list
