"""A group's log of its last changes (groups/kept.py): members kept under
any token of the log are brought to the group's state exactly, and
never from a token the log does not hold."""

from hypothesis import given
from hypothesis import strategies as st

from allocworker.db.grouping import groups as db_groups
from allocworker.groups import kept


def group(token=None, log=None, group_id=1):
    return db_groups.Group(group_id, 'u', 'g', None, None, None, 0, None,
                           token, log)


def placed(kind, *roots):
    return db_groups.Placed(kind, set(roots))


def written(row, members, movers):
    """The group row and members once ``movers`` are written."""
    token, log = kept.mark(row, movers)
    after = dict(members, **movers)
    return group(token, log, row.id), after


# A write: one or two members, each placed on up to two of five roots.
WRITES = st.lists(st.dictionaries(
    st.sampled_from('abcd'),
    st.tuples(st.sampled_from([None, 'INSTANCE']),
              st.sets(st.integers(1, 5), max_size=2)),
    min_size=1, max_size=2), min_size=1, max_size=kept.LOG_STEPS + 4)


@given(WRITES)
def test_members_kept_under_any_token_of_the_log_catch_up(writes):
    row, members = written(group(), {}, {'a': placed(None, 1)})
    states = [(row.members_token, dict(members))]
    for write in writes:
        row, members = written(row, members, {
            uuid: placed(kind, *roots) for uuid, (kind, roots)
            in write.items()})
        states.append((row.members_token, dict(members)))
    in_log = {step[0] for step in kept._log(row)}
    for token, state in states:
        caught = kept._caught_up((token, state), row)
        if token in in_log:
            assert caught == members
        else:
            assert caught is None
    assert len(in_log) == min(len(states), kept.LOG_STEPS)


def test_a_token_not_in_the_log_catches_up_nothing():
    row, members = written(group(), {}, {'a': placed(None, 1)})
    row, members = written(row, members, {'b': placed(None, 2)})
    assert kept._caught_up((12345, {}), row) is None


def test_a_group_whose_token_was_cleared_starts_a_new_log():
    row, members = written(group(), {}, {'a': placed(None, 1)})
    cleared = row._replace(members_token=None, members_log=None)
    row, members = written(cleared, members, {'b': placed(None, 2)})
    assert [step[0] for step in kept._log(row)] == [row.members_token]


def test_a_log_not_ending_at_the_token_is_not_read():
    row, _members = written(group(), {}, {'a': placed(None, 1)})
    assert kept._log(row._replace(members_token=7)) is None


def test_members_kept_are_copies():
    members = kept._Members(2)
    row = group(token=5)
    members.put(1, 5, {'a': placed(None, 1)})
    found = members.get(row)
    found['b'] = placed(None, 2)
    assert members.get(row) == {'a': placed(None, 1)}
    members.put(2, 5, {})
    members.put(3, 5, {})
    assert members.get(row) is None   # the least recently used went
