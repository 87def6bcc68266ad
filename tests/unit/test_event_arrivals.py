"""The events cursor of parked waits: ids read out of order are neither
missed nor read twice, and gaps that never fill are let go."""

from allocworker.events import watch


def _cursor(floor=0):
    arrivals = watch.Arrivals()
    arrivals.floor = floor
    return arrivals


def _read(arrivals, ids, now):
    return arrivals.take([(i, 'c%d' % i) for i in ids], now)


def test_in_order_ids_move_the_floor_to_the_highest():
    arrivals = _cursor(10)
    assert _read(arrivals, [11, 12, 13], now=0) == {'c11', 'c12', 'c13'}
    assert arrivals.floor == 13


def test_a_late_commit_below_the_highest_id_is_still_read_once():
    arrivals = _cursor(10)
    # 12 committed after 13 and 14 were read.
    assert _read(arrivals, [11, 13, 14], now=0) == {'c11', 'c13', 'c14'}
    assert arrivals.floor == 11
    # The next look reads everything above the floor again: only 12 is new.
    assert _read(arrivals, [12, 13, 14, 15], now=1) == {'c12', 'c15'}
    assert arrivals.floor == 15


def test_a_gap_that_never_fills_is_let_go():
    arrivals = _cursor(0)
    _read(arrivals, [1, 3], now=0)
    assert arrivals.floor == 1
    _read(arrivals, [3, 4], now=watch.GAP_SECONDS - 1)
    assert arrivals.floor == 1
    _read(arrivals, [3, 4], now=watch.GAP_SECONDS + 1)
    assert arrivals.floor == 4


def test_a_jump_in_ids_is_not_walked():
    arrivals = _cursor(0)
    far = watch.MAX_GAPS * 10
    assert _read(arrivals, [1, far], now=0) == {'c1', 'c%d' % far}
    assert arrivals.floor == far and not arrivals._gaps
