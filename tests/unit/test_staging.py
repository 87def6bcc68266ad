"""``staging.merged``: held-back write sets become one."""

import collections

from allocworker.allocations import staging
from allocworker.db.ledger import allocations as db_allocations


def _writes(consumer, provider, generation, project='p'):
    return db_allocations.WriteSet(
        replaced=[], updated=[], created=[(consumer, project, 'u', 'I')],
        emptied=[], rows=[(consumer, provider, 7, 1)], usage={},
        bumps={provider: generation},
        project_usage={(project, 'I', 7): 1},
        project_consumers={(project, 'I'): 1})


def test_merged_adds_counters_and_moves_each_provider_once():
    merged = staging.merged([_writes('a', 1, 5), _writes('b', 1, 5),
                             _writes('c', 2, 9, project='q')])
    assert [c[0] for c in merged.created] == ['a', 'b', 'c']
    assert [r[0] for r in merged.rows] == ['a', 'b', 'c']
    assert merged.bumps == {1: 5, 2: 9}
    assert merged.project_usage == collections.Counter(
        {('p', 'I', 7): 2, ('q', 'I', 7): 1})
    assert merged.project_consumers == collections.Counter(
        {('p', 'I'): 2, ('q', 'I'): 1})
    assert merged.usage == {}


def test_merged_of_nothing_writes_nothing():
    merged = staging.merged([])
    assert not any(merged)
