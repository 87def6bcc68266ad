"""allocate's item parser: every item parses or faults naming its
place, and a batch faults what it names twice exactly as the rule was
first written (the shortcut for batches that name nothing twice)."""

import collections

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from allocworker.allocations import writes
from allocworker import codes

UUID = '6e0a8f5b-6a2c-4c43-9d3e-9c7c1b0c2a10'
OTHER = '0c6e6b14-3a0f-4f55-bd6e-5f1c1b6a7d21'
uuids = st.sampled_from([
    UUID, OTHER, UUID.upper(), '{%s}' % OTHER, UUID.replace('-', ''),
    'urn:uuid:' + OTHER, UUID + '\n', UUID[:-1], '', 'x']) | st.uuids(
        ).map(str)
strings = st.sampled_from(['p', '', 'x' * 255, 'x' * 256, 'a\n']) | \
    st.text(max_size=4)
scalars = st.none() | st.booleans() | st.integers(-2, 3) | st.floats(
    allow_nan=False) | st.sampled_from([2147483647, 2147483648])
odd = scalars | st.sampled_from([[], {}])
names = st.sampled_from(['VCPU', 'MEMORY_MB', 'CUSTOM_X', 'vcpu', 'VCPU\n',
                         '', 'A' * 256, 'A' * 255]) | scalars
amounts = st.integers(-1, 3) | st.sampled_from(
    [2147483647, 2147483648, True, 1.0, '1', None])
resources = st.dictionaries(names, amounts, max_size=3) | odd
allocations = st.dictionaries(uuids | scalars, resources, max_size=3) | odd
fields = {
    'consumer_uuid': uuids | odd, 'consumer_generation': odd,
    'project_id': strings | odd, 'user_id': strings | odd,
    'consumer_type': st.sampled_from(['INSTANCE', 'x', 'A\n']) | odd,
    'allocations': allocations, 'group_uuid': uuids | odd,
    'idempotency_key': strings | odd, 'extra': odd}
REQUIRED = ('consumer_uuid', 'consumer_generation', 'project_id',
            'user_id', 'allocations')
items = st.fixed_dictionaries(
    {k: v for k, v in fields.items() if k in REQUIRED},
    optional={k: v for k, v in fields.items() if k not in REQUIRED})
partial = st.fixed_dictionaries({}, optional=fields)
# Well-formed items with one field changed, so that both paths see many
# items that parse and many that fail by one detail.
valid = st.fixed_dictionaries({
    'consumer_uuid': st.uuids().map(str),
    'consumer_generation': st.none() | st.integers(0, 5),
    'project_id': st.just('p'), 'user_id': st.just('u'),
    'allocations': st.dictionaries(st.uuids().map(str), st.dictionaries(
        st.sampled_from(['VCPU', 'MEMORY_MB']), st.integers(1, 3),
        min_size=1), min_size=1, max_size=2)},
    optional={'consumer_type': st.just('INSTANCE'),
              'group_uuid': st.uuids().map(str),
              'idempotency_key': st.just('k')})
near = st.builds(lambda item, changed: dict(item, **changed), valid,
                 st.fixed_dictionaries({}, optional=fields))


def outcome(parse, raw, index=4):
    try:
        return parse(raw, index)
    except codes.Fault as fault:
        return (fault.code, fault.detail)


@settings(max_examples=500, deadline=None)
@given(near | items | partial | odd)
def test_every_item_parses_or_faults_naming_its_place(raw):
    parsed = outcome(writes.parse_item, raw)
    if isinstance(parsed, writes.Request):
        assert parsed.index == 4 and parsed.consumer_uuid == \
            parsed.consumer_uuid.lower()
    else:
        assert parsed[1].startswith('items[4]'), parsed


def _original_batch(batch):
    """The batch rule as it was written first, for comparison."""
    parsed = [outcome(writes.parse_item, raw, i)
              for i, raw in enumerate(batch)]
    parsed = [p if isinstance(p, writes.Request) else codes.Fault(*p)
              for p in parsed]
    for field in ('consumer_uuid', 'idempotency_key'):
        seen = collections.Counter(getattr(r, field) for r in parsed
                                   if isinstance(r, writes.Request))
        for i, r in enumerate(parsed):
            value = getattr(r, field, None)
            if isinstance(r, writes.Request) and value and seen[value] > 1:
                parsed[i] = codes.Fault(
                    codes.INVALID_REQUEST,
                    'items[%d].%s %s appears %d times in this call'
                    % (i, field, value, seen[value]))
    return parsed


def _shown(parsed):
    return [(p.code, p.detail) if isinstance(p, codes.Fault) else
            p._replace(index=None) for p in parsed]


@given(st.lists(st.fixed_dictionaries({
    'consumer_uuid': st.sampled_from([UUID, OTHER, UUID.upper()]),
    'consumer_generation': st.none(), 'project_id': st.just('p'),
    'user_id': st.just('u'), 'allocations': st.just({OTHER: {'VCPU': 1}})},
    optional={'idempotency_key': st.sampled_from(['a', 'b', ''])}),
    max_size=6))
def test_a_batch_faults_what_it_names_twice_as_before(batch):
    got = writes._parse_batch(batch)
    assert _shown(got) == _shown(_original_batch(batch))
    assert [getattr(p, 'index', None) for p in got
            if isinstance(p, writes.Request)] == [
        i for i, p in enumerate(got) if isinstance(p, writes.Request)]
