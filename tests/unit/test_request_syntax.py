"""The request syntax (scheduling/request.py): design §3's RPC dict and
Placement's query string, parsed into one Request; every malformed input
is a 400 that names its field."""

from hypothesis import given
from hypothesis import strategies as st
import pytest

from allocworker import codes
from allocworker.scheduling import placement_query
from allocworker.scheduling import request

AGG = '6ba7b810-9dad-11d1-80b4-00c04fd430c8'
TREE = '0c6e6b14-3a0f-4f55-bd6e-5f1c1b6a7d21'

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) |
    st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)

GOOD_GROUP = {'resources': {'VCPU': 1}, 'required': ['HW_CPU_X86_AVX'],
              'member_of': [AGG], 'in_tree': TREE}


def good():
    return {'groups': [dict(GOOD_GROUP), dict(GOOD_GROUP)],
            'group_policy': 'isolate', 'same_subtree': [[1]],
            'root_required': ['COMPUTE_STATUS_ENABLED']}


def test_rpc_request_parses_every_field():
    raw = good()
    raw['groups'][0] = {
        'resources': {'VCPU': 2, 'MEMORY_MB': 512},
        'required': ['A', '!B', 'in:C,D', 'in:E'],
        'member_of': [AGG, 'in:%s,%s' % (AGG, TREE), '!in:' + TREE]}
    raw['root_required'] = ['X', '!Y']
    parsed = request.parse_request(raw)
    first, second = parsed.groups
    assert (first.label, first.single_provider) == ('0', False)
    assert (second.label, second.single_provider) == ('1', True)
    assert first.resources == {'VCPU': 2, 'MEMORY_MB': 512}
    assert first.required == {'A', 'E'}
    assert first.any_traits == (frozenset({'C', 'D'}),)
    assert first.forbidden == {'B'}
    assert first.member_of == (frozenset({AGG}), frozenset({AGG, TREE}))
    assert first.forbidden_aggregates == {TREE}
    assert second.in_tree == TREE
    assert parsed.group_policy == 'isolate'
    assert parsed.same_subtree == ((1,),)
    assert (parsed.root_required, parsed.root_forbidden) == ({'X'}, {'Y'})


@pytest.mark.parametrize('field', sorted(GOOD_GROUP))
@given(value=json_values)
def test_any_wrong_group_field_is_a_400_naming_it(field, value):
    raw = good()
    raw['groups'][1] = dict(GOOD_GROUP, **{field: value})
    try:
        request.parse_request(raw)
    except codes.Fault as fault:
        assert fault.code == codes.INVALID_REQUEST
        assert 'request.groups[1].%s' % field in fault.detail


@pytest.mark.parametrize('field', ['group_policy', 'same_subtree',
                                   'root_required'])
@given(value=json_values)
def test_any_wrong_request_field_is_a_400_naming_it(field, value):
    raw = dict(good(), **{field: value})
    try:
        request.parse_request(raw)
    except codes.Fault as fault:
        assert fault.code == codes.INVALID_REQUEST
        assert 'request.%s' % field in fault.detail


@given(value=json_values)
def test_anything_that_is_not_a_request_is_a_400(value):
    try:
        request.parse_request(value)
    except codes.Fault as fault:
        assert fault.code == codes.INVALID_REQUEST
        assert 'request' in fault.detail


@pytest.mark.parametrize('raw, words', [
    ({'groups': []}, 'request.groups'),
    ({'groups': [{'resources': {}}]}, 'request.groups[0].resources'),
    ({'groups': [{'resources': {'VCPU': 0}}]},
     'request.groups[0].resources.VCPU'),
    ({'groups': [{'resources': {'VCPU': 1}, 'required': ['A', '!A']}]},
     'request.groups[0].required both requires and forbids A'),
    ({'groups': [{'resources': {'VCPU': 1}}], 'same_subtree': [[0]]},
     'request.same_subtree[0]'),
    ({'groups': [{'resources': {'VCPU': 1}}], 'root_required': ['!A', 'A']},
     'request.root_required'),
    ({'groups': [{'resources': {'VCPU': 1}, 'member_of': ['in:x,y']}]},
     'request.groups[0].member_of[0]'),
])
def test_named_refusals(raw, words):
    with pytest.raises(codes.Fault) as caught:
        request.parse_request(raw)
    assert words in caught.value.detail


def query(minor, **params):
    return placement_query.parse_query(
        {k: v if isinstance(v, list) else [v] for k, v in params.items()},
        minor)


def test_query_groups_by_suffix():
    parsed, limit = query(39, resources='VCPU:1', required='A,!B',
                          resources_NIC='VF:1', required_NIC='in:X,Y',
                          member_of_NIC='!' + AGG, in_tree_NIC=TREE,
                          group_policy='isolate', limit='5',
                          root_required='R,!S')
    assert limit == 5
    unnumbered, nic = parsed.groups
    assert (unnumbered.label, unnumbered.single_provider) == ('', False)
    assert (nic.label, nic.single_provider) == ('_NIC', True)
    assert nic.any_traits == (frozenset({'X', 'Y'}),)
    assert nic.forbidden_aggregates == {AGG}
    assert nic.in_tree == TREE
    assert parsed.root_required == {'R'}
    assert parsed.root_forbidden == {'S'}


def test_before_1_39_the_last_required_wins():
    parsed, _ = query(38, resources='VCPU:1', required=['A', 'B'])
    assert parsed.groups[0].required == {'B'}
    parsed, _ = query(39, resources='VCPU:1', required=['A', 'B'])
    assert parsed.groups[0].required == {'A', 'B'}


def test_same_subtree_names_groups_by_index():
    parsed, _ = query(36, resources_A='VCPU:1', required_B='X',
                      same_subtree='_A,_B', group_policy='none')
    labels = [g.label for g in parsed.groups]
    assert [labels[i] for i in parsed.same_subtree[0]] == ['_A', '_B']


@pytest.mark.parametrize('minor, params, words, reason', [
    (15, {'resources': 'VCPU:1', 'limit': '5'}, "'limit' was unexpected",
     None),
    (16, {'resources': 'VCPU:1', 'limit': '0'}, "Failed validating 'pattern'",
     None),
    (10, {}, "'resources' is a required property", None),
    (25, {'resources01': 'VCPU:1'}, 'does not match any of the regexes',
     None),
    (25, {'resources1': 'VCPU:1', 'resources2': 'VCPU:1'},
     'The "group_policy" parameter is required', None),
    (25, {'resources': 'VCPU'}, 'Got: VCPU.', None),
    (25, {'resources': 'VCPU:-2'}, 'requires amount >= 1. Got: -2.', None),
    (25, {'resources': 'VCPU:x'}, 'expected positive integer amount', None),
    (21, {'resources': 'VCPU:1', 'required': '!A'},
     'HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !A', None),
    (38, {'resources': 'VCPU:1', 'required': 'in:A,B'},
     'only supported since microversion 1.39', None),
    (25, {'required1': 'A', 'resources': 'VCPU:1'},
     'orphaned traits keys: required1', None),
    (31, {'resources': 'VCPU:1', 'in_tree': 'nope'},
     "Expected 'in_tree' parameter to be a format of uuid", None),
    (31, {'resources': 'VCPU:1', 'member_of': '!' + AGG},
     'Forbidden member_of parameters are not supported', None),
    (35, {'resources': 'VCPU:1', 'root_required': ['A', 'B']},
     'may be specified only once', 'duplicate_key'),
    (35, {'resources': 'VCPU:1', 'root_required': 'A,!A'},
     'found in root_required: A', 'bad_value'),
    (36, {'required_A': 'X'}, 'at least one resources', 'missing_value'),
    (36, {'resources': 'VCPU:1', 'required_A': 'X'},
     'should be specified in `same_subtree`', 'bad_value'),
    (36, {'resources': 'VCPU:1', 'same_subtree': '_A'},
     "Real suffixes should be specified", 'bad_value'),
    (36, {'resources': 'VCPU:1', 'same_subtree': ',_A'},
     'Empty string (unsuffixed group)', 'bad_value'),
])
def test_query_refusals_read_as_placement_s(minor, params, words, reason):
    with pytest.raises(codes.Fault) as caught:
        query(minor, **params)
    assert caught.value.code == codes.INVALID_REQUEST
    assert words in caught.value.detail
    assert caught.value.fields['reason'] == reason
