"""The counter rows a transaction moves: one draw per transaction, so a
transaction of several writes (a shared claim transaction) holds one
row of each counter, never several taken in no order."""

from allocworker.db.limits import project_counters


class _Connection(object):
    """What ``project_counters.shard`` asks of a connection: its
    transaction and a place to keep what it drew."""

    def __init__(self):
        self.info = {}
        self.transaction = object()

    def get_transaction(self):
        return self.transaction


def test_every_write_of_one_transaction_moves_the_same_rows():
    conn = _Connection()
    drawn = {project_counters.shard(conn) for _ in range(50)}
    assert len(drawn) == 1
    assert drawn <= set(range(project_counters.SHARDS))


def test_each_transaction_draws_afresh():
    conn = _Connection()
    drawn = set()
    for _ in range(200):
        conn.transaction = object()
        drawn.add(project_counters.shard(conn))
    assert drawn == set(range(project_counters.SHARDS))
