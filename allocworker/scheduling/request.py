"""What one consumer needs, in Placement's granular terms: one
representation and its two parsers (RPC dict, Placement query string).

Interface
---------
``parse_request(raw)`` -> ``Request``
    ``raw`` is design §3's request dict: ``{"groups": [G, ...],
    "group_policy"?, "same_subtree"?, "root_required"?, "partitions"?}``
    with each ``G``
    ``{"resources": {class: int} (at least one), "required"?: [trait,
    "!trait", "in:T1,T2"], "member_of"?: [agg, "in:A,B", "!in:A,B",
    "!agg"], "in_tree"?: uuid}``. Group 0 is the unnumbered group; its
    label (the key of ``mappings``) is ``"0"``, group N's is ``"N"``.
    Malformed input raises ``Fault(INVALID_REQUEST)`` whose detail names
    the field (``request.groups[1].resources.VCPU ...``).

``placement_query.parse_query(params, minor)`` -> ``(Request, limit)``
    the same Request from Placement's query string (see that module).

``Request``: ``groups`` (tuple of ``Group``, the unnumbered one first
when there is one), ``group_policy`` (``"none"``/``"isolate"``),
``same_subtree`` (tuple of tuples of indices into ``groups``),
``root_required`` and ``root_forbidden`` (frozensets of traits),
``partitions`` (frozenset of the partitions searched, None for every
one the caller sees; RPC 1.6).

``Group``: ``label``; ``single_provider`` (False only for the
unnumbered group, whose classes may come from several providers of one
tree and from sharing providers); ``resources`` {class: amount}
(empty only for a resourceless group named in ``same_subtree``,
Placement 1.36+); ``required`` (frozenset, all needed), ``any_traits``
(tuple of frozensets, one of each needed), ``forbidden`` (frozenset);
``member_of`` (tuple of frozensets, the provider must be in one
aggregate of each), ``forbidden_aggregates`` (frozenset); ``in_tree``
(provider uuid or None).
"""

import collections

from allocworker import partitions
from allocworker import validation

Group = collections.namedtuple('Group', [
    'label', 'single_provider', 'resources', 'required', 'any_traits',
    'forbidden', 'member_of', 'forbidden_aggregates', 'in_tree'])

Request = collections.namedtuple('Request', [
    'groups', 'group_policy', 'same_subtree', 'root_required',
    'root_forbidden', 'partitions'], defaults=(None,))

POLICIES = ('none', 'isolate')
MAX_GROUPS = 64


def group(label, single_provider, resources, required=(), any_traits=(),
          forbidden=(), member_of=(), forbidden_aggregates=(), in_tree=None):
    return Group(label, single_provider, dict(resources),
                 frozenset(required), tuple(any_traits), frozenset(forbidden),
                 tuple(member_of), frozenset(forbidden_aggregates), in_tree)


# The RPC dict (design §3)

def parse_request(raw):
    field = 'request'
    validation.mapping(raw, field)
    validation.only_keys(raw, field, ('groups', 'group_policy',
                                      'same_subtree', 'root_required',
                                      'partitions'))
    groups = validation.required(raw, field, 'groups')
    if not isinstance(groups, list) or not groups:
        raise validation.invalid('request.groups must be a non-empty list')
    if len(groups) > MAX_GROUPS:
        raise validation.invalid('request.groups has %d groups; at most %d '
                                 'are allowed' % (len(groups), MAX_GROUPS))
    parsed = tuple(_rpc_group(g, index) for index, g in enumerate(groups))
    policy = raw.get('group_policy', 'none')
    if policy not in POLICIES:
        raise validation.invalid('request.group_policy must be "none" or '
                                 '"isolate", not %r' % (policy,))
    subtrees = _rpc_same_subtree(raw.get('same_subtree', []), len(parsed))
    root = raw.get('root_required', [])
    if not isinstance(root, list):
        raise validation.invalid('request.root_required must be a list of '
                                 'traits')
    required, forbidden = set(), set()
    for n, name in enumerate(root):
        where = 'request.root_required[%d]' % n
        validation.string(name, where)
        negated = name.startswith('!')
        validation.trait_name(name[1:] if negated else name, where)
        (forbidden if negated else required).add(name.lstrip('!'))
    if required & forbidden:
        raise validation.invalid(
            'request.root_required both requires and forbids %s'
            % ', '.join(sorted(required & forbidden)))
    return Request(parsed, policy, subtrees, frozenset(required),
                   frozenset(forbidden), _rpc_partitions(raw))


def _rpc_partitions(raw):
    """The request's ``partitions``: a non-empty list of partition
    names, or None when absent."""
    if raw.get('partitions') is None:
        return None
    names = raw['partitions']
    if not isinstance(names, list) or not names:
        raise validation.invalid('request.partitions must be a non-empty '
                                 'list of partition names')
    return frozenset(partitions.parse(name, 'request.partitions[%d]' % n)
                     for n, name in enumerate(names))


def _rpc_group(raw, index):
    field = 'request.groups[%d]' % index
    validation.mapping(raw, field)
    validation.only_keys(raw, field, ('resources', 'required', 'member_of',
                                      'in_tree'))
    resources = validation.mapping(
        validation.required(raw, field, 'resources'), field + '.resources')
    if not resources:
        raise validation.invalid('%s.resources must name at least one '
                                 'resource class' % field)
    for name, amount in resources.items():
        validation.resource_class(name, field + '.resources key')
        validation.integer(amount, '%s.resources.%s' % (field, name),
                           minimum=1)
    required, any_traits, forbidden = set(), [], set()
    for n, text in enumerate(_list(raw, 'required', field)):
        where = '%s.required[%d]' % (field, n)
        validation.string(text, where, max_length=65535)
        if text.startswith('in:'):
            names = text[3:].split(',')
            for name in names:
                validation.trait_name(name, where)
            add_any(required, any_traits, names)
        else:
            bare = text[1:] if text.startswith('!') else text
            validation.trait_name(bare, where)
            (forbidden if text.startswith('!') else required).add(bare)
    _no_conflict(required, any_traits, forbidden, field + '.required')
    member_of, forbidden_aggs = [], set()
    for n, text in enumerate(_list(raw, 'member_of', field)):
        where = '%s.member_of[%d]' % (field, n)
        validation.string(text, where, max_length=65535)
        negated = text.startswith('!')
        body = text[1:] if negated else text
        many = body.startswith('in:')
        names = body[3:].split(',') if many else [body]
        aggregates = {validation.uuid(a, where) for a in names}
        if negated:
            forbidden_aggs |= aggregates
        else:
            member_of.append(frozenset(aggregates))
    in_tree = validation.optional_uuid(raw.get('in_tree'), field + '.in_tree')
    return group(str(index), index != 0, resources, required, any_traits,
                 forbidden, member_of, forbidden_aggs, in_tree)


def _list(raw, key, field):
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise validation.invalid('%s.%s must be a list' % (field, key))
    return value


def add_any(required, any_traits, names):
    """Add an any-of set of trait names (one name is simply required)."""
    names = frozenset(names)
    if len(names) == 1:
        required |= names
    else:
        any_traits.append(names)


def _no_conflict(required, any_traits, forbidden, field):
    clash = sorted(required & forbidden) + [
        '(%s)' % ', '.join(sorted(names)) for names in any_traits
        if names <= forbidden]
    if clash:
        raise validation.invalid('%s both requires and forbids %s'
                                 % (field, ', '.join(clash)))


def _rpc_same_subtree(raw, count):
    if not isinstance(raw, list):
        raise validation.invalid('request.same_subtree must be a list of '
                                 'lists of group indices')
    subtrees = []
    for n, indices in enumerate(raw):
        where = 'request.same_subtree[%d]' % n
        if not isinstance(indices, list) or not indices:
            raise validation.invalid('%s must be a non-empty list of group '
                                     'indices' % where)
        for index in indices:
            validation.integer(index, where, minimum=1, maximum=count - 1)
        subtrees.append(tuple(sorted(set(indices))))
    return tuple(subtrees)
