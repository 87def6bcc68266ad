"""A slice of roots is read by its id range when that range holds at
most twice its roots (``db_candidates.range_pays``), counted only when
the range's width leaves it open."""

import pytest

from allocworker.db.search import candidates as db_candidates


@pytest.mark.parametrize('ids, counted, ranged', [
    ([10, 11, 12], False, True),
    ([10, 13], False, True),        # 4 ids wide: at most 4 roots
    ([10, 14], True, True),         # in between: counted (2 roots)
    ([10, 41], True, True),         # 32 wide: still counted
    ([10, 42], False, False),       # more than 16 times as wide
    ([1, 5000, 10000], False, False),
])
def test_a_slice_is_counted_only_when_its_width_leaves_it_open(
        monkeypatch, ids, counted, ranged):
    calls = []
    monkeypatch.setattr(db_candidates, 'count_roots',
                        lambda conn, low, high: calls.append((low, high))
                        or 2)
    assert db_candidates.range_pays(None, ids) is ranged
    assert calls == ([(ids[0], ids[-1])] if counted else [])


def test_a_count_of_many_roots_between_picks_the_list(monkeypatch):
    monkeypatch.setattr(db_candidates, 'count_roots',
                        lambda conn, low, high: 5)
    assert db_candidates.range_pays(None, [10, 20]) is False
