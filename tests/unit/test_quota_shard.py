"""The counter rows a transaction moves: one draw per transaction, so a
transaction of several writes (a shared claim transaction) holds one
row of each counter, never several taken in no order."""

from allocworker.db import quota


class _Connection(object):
    """What ``quota.shard`` asks of a connection: its transaction and a
    place to keep what it drew."""

    def __init__(self):
        self.info = {}
        self.transaction = object()

    def get_transaction(self):
        return self.transaction


def test_every_write_of_one_transaction_moves_the_same_rows():
    conn = _Connection()
    drawn = {quota.shard(conn) for _ in range(50)}
    assert len(drawn) == 1
    assert drawn <= set(range(quota.SHARDS))


def test_each_transaction_draws_afresh():
    conn = _Connection()
    drawn = set()
    for _ in range(200):
        conn.transaction = object()
        drawn.add(quota.shard(conn))
    assert drawn == set(range(quota.SHARDS))
