"""What one consumer needs, in Placement's granular terms: one
representation and its two parsers (RPC dict, Placement query string).

Interface
---------
``parse_request(raw)`` -> ``Request``
    ``raw`` is design §3's request dict: ``{"groups": [G, ...],
    "group_policy"?, "same_subtree"?, "root_required"?}`` with each ``G``
    ``{"resources": {class: int} (at least one), "required"?: [trait,
    "!trait", "in:T1,T2"], "member_of"?: [agg, "in:A,B", "!in:A,B",
    "!agg"], "in_tree"?: uuid}``. Group 0 is the unnumbered group; its
    label (the key of ``mappings``) is ``"0"``, group N's is ``"N"``.
    Malformed input raises ``Fault(INVALID_REQUEST)`` whose detail names
    the field (``request.groups[1].resources.VCPU ...``).

``parse_query(params, minor)`` -> ``(Request, limit or None)``
    ``params`` is the query string as ``{name: [value, ...]}`` (what
    ``urllib.parse.parse_qs(..., keep_blank_values=True)`` returns);
    ``minor`` is the microversion's minor number (1.``minor``), which
    decides the parameters accepted, as Placement's
    ``GET /allocation_candidates`` does. The unnumbered group is labelled
    ``""``, a numbered one by its suffix. Errors raise
    ``Fault(INVALID_REQUEST)`` with Placement's wording and a field
    ``reason`` (``bad_value``, ``missing_value``, ``duplicate_key`` or
    None) the REST shim turns into Placement's error code.

``Request``: ``groups`` (tuple of ``Group``, the unnumbered one first
when there is one), ``group_policy`` (``"none"``/``"isolate"``),
``same_subtree`` (tuple of tuples of indices into ``groups``),
``root_required`` and ``root_forbidden`` (frozensets of traits).

``Group``: ``label``; ``single_provider`` (False only for the
unnumbered group, whose classes may come from several providers of one
tree and from sharing providers); ``resources`` {class: amount}
(empty only for a resourceless group named in ``same_subtree``,
Placement 1.36+); ``required`` (frozenset, all needed), ``any_traits``
(tuple of frozensets, one of each needed), ``forbidden`` (frozenset);
``member_of`` (tuple of frozensets, the provider must be in one
aggregate of each), ``forbidden_aggregates`` (frozenset); ``in_tree``
(provider uuid or None).

``provider_filters(params, minor)`` -> ``Group``: the same syntax as
the filters of Placement's ``GET /resource_providers``.
"""

import collections
import re

import jsonschema

from allocworker import codes
from allocworker import validation

Group = collections.namedtuple('Group', [
    'label', 'single_provider', 'resources', 'required', 'any_traits',
    'forbidden', 'member_of', 'forbidden_aggregates', 'in_tree'])

Request = collections.namedtuple('Request', [
    'groups', 'group_policy', 'same_subtree', 'root_required',
    'root_forbidden'])

POLICIES = ('none', 'isolate')
_PREFIXES = ('resources', 'required', 'member_of', 'in_tree')
_NUMBERED = r'[1-9][0-9]*'
_SUFFIXED = r'[a-zA-Z0-9_-]{1,64}'
MAX_GROUPS = 64


def group(label, single_provider, resources, required=(), any_traits=(),
          forbidden=(), member_of=(), forbidden_aggregates=(), in_tree=None):
    return Group(label, single_provider, dict(resources),
                 frozenset(required), tuple(any_traits), frozenset(forbidden),
                 tuple(member_of), frozenset(forbidden_aggregates), in_tree)


def fault(detail, reason='bad_value'):
    return codes.Fault(codes.INVALID_REQUEST, detail, reason=reason)


# The RPC dict (design §3)

def parse_request(raw):
    field = 'request'
    validation.mapping(raw, field)
    validation.only_keys(raw, field, ('groups', 'group_policy',
                                      'same_subtree', 'root_required'))
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
                   frozenset(forbidden))


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
            _add_any(required, any_traits, names)
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


def _add_any(required, any_traits, names):
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


# Placement's query string (GET /allocation_candidates)

def _schema(minor):
    """Which parameters Placement accepts at 1.``minor``, as a JSON schema
    (so the refusals read as Placement's do)."""
    properties = {'resources': {'type': 'string'}}
    schema = {'type': 'object', 'properties': properties,
              'additionalProperties': False}
    if minor >= 16:
        properties['limit'] = {'type': 'string',
                               'pattern': '^[1-9][0-9]*$', 'minLength': 1}
    if minor >= 17:
        properties['required'] = {'type': 'string'}
    if minor >= 21:
        properties['member_of'] = {'type': 'string'}
    if minor < 25:
        schema['required'] = ['resources']
        return schema
    for name in ('resources', 'required', 'member_of'):
        del properties[name]
    properties['group_policy'] = {'type': 'string', 'enum': list(POLICIES)}
    prefixes = _PREFIXES if minor >= 31 else _PREFIXES[:3]
    suffix = _SUFFIXED if minor >= 33 else _NUMBERED
    schema['patternProperties'] = {'^%s(%s)?$' % (p, suffix): {
        'type': 'string'} for p in prefixes}
    if minor >= 35:
        properties['root_required'] = {'type': 'string'}
    if minor >= 36:
        properties['same_subtree'] = {'type': 'string'}
    return schema


def parse_query(params, minor):
    try:
        jsonschema.validate({k: v[-1] for k, v in params.items()},
                            _schema(minor))
    except jsonschema.ValidationError as exc:
        raise fault('Invalid query string parameters: %s' % exc, None)
    limit = int(params['limit'][0]) if 'limit' in params else None
    pattern = re.compile('^(%s)(%s)?$' % ('|'.join(_PREFIXES), _SUFFIXED
                                          if minor >= 33 else _NUMBERED))
    found = {}
    for key in params:
        match = pattern.match(key)
        if match:
            found.setdefault(match.group(2) or '', {})[match.group(1)] = \
                params[key]
    labels = sorted(found, key=lambda s: (s != '', s))
    subtrees = _query_same_subtree(params.get('same_subtree', []))
    groups = [_query_group(label, found[label], minor) for label in labels]
    _check_groups(groups, subtrees, minor)
    policy = params.get('group_policy', [None])[0]
    if policy is None:
        if sum(1 for g in groups if g.single_provider) > 1:
            raise fault('The "group_policy" parameter is required when '
                        'specifying more than one "resources{N}" '
                        'parameter.', None)
        policy = 'none'
    root_required, root_forbidden = _root_required(
        params.get('root_required', []))
    index = {g.label: n for n, g in enumerate(groups)}
    return Request(tuple(groups), policy,
                   tuple(tuple(sorted(index[s] for s in subtree))
                         for subtree in subtrees),
                   root_required, root_forbidden), limit


def provider_filters(params, minor):
    """The filters of Placement's ``GET /resource_providers``
    (``resources``, ``required``, ``member_of``, ``in_tree``) as one
    single-provider Group labelled ``""``."""
    return _query_group('', {k: v for k, v in params.items()
                             if k in _PREFIXES}, minor, single=True)


def _query_group(label, values, minor, single=None):
    resources = {}
    if 'resources' in values:
        resources = resources_value(values['resources'][-1])
    required, any_traits, forbidden = set(), [], set()
    texts = values.get('required', [])
    for text in (texts if minor >= 39 else texts[-1:]):
        all_of, one_of, none_of = traits_value(text, minor)
        required |= all_of
        forbidden |= none_of
        for names in one_of:
            _add_any(required, any_traits, names)
    member_of, forbidden_aggs = member_of_values(
        values.get('member_of', []), minor, label)
    in_tree = None
    if 'in_tree' in values:
        in_tree = in_tree_value(values['in_tree'][-1])
    return group(label, label != '' if single is None else single,
                 resources, required, any_traits, forbidden, member_of,
                 forbidden_aggs, in_tree)


def _check_groups(groups, subtrees, minor):
    by_label = {g.label: g for g in groups}
    if minor >= 36:
        resourceless = [g.label for g in groups if not g.resources]
        if len(resourceless) == len(groups):
            raise fault('There must be at least one resources or '
                        'resources[$S] parameter.', 'missing_value')
        named = set().union(*subtrees) if subtrees else set()
        bad = [label for label in resourceless if label not in named]
        if bad:
            raise fault('Resourceless suffixed group request should be '
                        'specified in `same_subtree` query param: bad '
                        'group(s) - %s.' % bad)
        bad = [s for subtree in subtrees for s in sorted(subtree)
               if s not in by_label]
        if bad:
            raise fault('Real suffixes should be specified in '
                        '`same_subtree`: %s not found in %s.'
                        % (bad, list(by_label)))
    else:
        orphans = ['required' + g.label for g in groups
                   if (g.required or g.any_traits or g.forbidden) and
                   not g.resources]
        if orphans:
            raise fault('All traits parameters must be associated with '
                        'resources.  Found the following orphaned traits '
                        'keys: %s' % ', '.join(orphans), None)
        orphans = ['member_of' + g.label for g in groups
                   if (g.member_of or g.forbidden_aggregates) and
                   not g.resources]
        if orphans:
            raise fault('All member_of parameters must be associated with '
                        'resources. Found the following orphaned member_of '
                        'keys: %s' % ', '.join(orphans), None)
        if not all(g.resources for g in groups):
            raise fault('All request groups must specify resources.', None)
        if not groups:
            raise fault('At least one request group (`resources` or '
                        '`resources{$S}`) is required.', None)
    if minor >= 22:
        clash = sorted(
            'required%s: (%s)' % (g.label, ', '.join(sorted(names)))
            for g in groups
            for names in [frozenset([t]) for t in g.required] +
            list(g.any_traits) if names <= g.forbidden)
        if clash:
            raise fault('Conflicting required and forbidden traits found in '
                        'the following traits keys: %s' % ', '.join(clash),
                        None)


def _query_same_subtree(values):
    subtrees = []
    for value in values:
        suffixes = {part.strip() for part in value.split(',')}
        if '' in suffixes:
            raise fault('Empty string (unsuffixed group) can not be '
                        'specified in `same_subtree` ')
        subtrees.append(suffixes)
    return subtrees


def _root_required(values):
    if not values:
        return frozenset(), frozenset()
    if len(values) > 1:
        raise fault("Query parameter 'root_required' may be specified only "
                    "once.", 'duplicate_key')
    required, any_traits, forbidden = traits_value(values[0], 38)
    required = required | {t for names in any_traits for t in names}
    clash = required & forbidden
    if clash:
        raise fault('Conflicting required and forbidden traits found in '
                    'root_required: %s' % ', '.join(sorted(clash)))
    return frozenset(required), frozenset(forbidden)


def resources_value(text):
    """{class: amount} from ``VCPU:2,MEMORY_MB:1024``."""
    if text.strip() == '':
        raise fault('Badly formed resources parameter. Expected resources '
                    'query string parameter in form: '
                    '?resources=VCPU:2,MEMORY_MB:1024. Got: empty string.',
                    None)
    wanted = {}
    for part in text.split(','):
        pieces = part.split(':')
        if len(pieces) != 2:
            raise fault('Badly formed resources parameter. Expected '
                        'resources query string parameter in form: '
                        '?resources=VCPU:2,MEMORY_MB:1024. Got: %s.' % part,
                        None)
        name, amount = pieces
        try:
            amount = int(amount)
        except ValueError:
            raise fault('Requested resource %s expected positive integer '
                        'amount. Got: %s.' % (name, amount), None)
        if amount < 1:
            raise fault('Requested resource %s requires amount >= 1. Got: '
                        '%d.' % (name, amount), None)
        wanted[name] = amount
    return wanted


def traits_value(text, minor):
    """(required, [any-of sets], forbidden) from ``A,!B`` or, from 1.39,
    ``in:A,B``; ``!`` is accepted from 1.22."""
    if text.startswith('in:'):
        if minor < 39:
            raise fault("Invalid query string parameters: The format "
                        "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported "
                        "since microversion 1.39. Got: %s" % text, None)
        names = {part.strip() for part in text[3:].split(',')}
        if not all(names):
            raise fault("Invalid query string parameters: Expected "
                        "'required' parameter value of the form: "
                        "in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait "
                        "in: %s" % text, None)
        if any(n.startswith('!') for n in names):
            raise fault("Invalid query string parameters: The format "
                        "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support "
                        "forbidden traits. Got: %s" % text, None)
        return set(), [frozenset(names)], set()
    names = [part.strip() for part in text.split(',')]
    forbidden = {n.lstrip('!') for n in names if n.startswith('!')}
    form = ('HW_CPU_X86_VMX,!CUSTOM_MAGIC' if minor >= 22
            else 'HW_CPU_X86_VMX,CUSTOM_MAGIC')
    if not all(names) or not all(forbidden):
        raise fault("Invalid query string parameters: Expected 'required' "
                    "parameter value of the form: %s. Got an empty trait "
                    "in: %s" % (form, text), None)
    if forbidden and minor < 22:
        raise fault("Invalid query string parameters: Expected 'required' "
                    "parameter value of the form: HW_CPU_X86_VMX,"
                    "CUSTOM_MAGIC. Got: %s" % text, None)
    return {n for n in names if not n.startswith('!')}, [], forbidden


def member_of_values(values, minor, label=''):
    """([any-of aggregate sets], forbidden aggregates) from every
    ``member_of`` value: ``agg``, ``in:a,b``, ``!agg``, ``!in:a,b``."""
    if minor < 24 and len(values) > 1:
        raise fault('Multiple member_of%s parameters are not supported'
                    % label, None)
    member_of, forbidden = [], set()
    for value in values:
        if ',' in value and not value.startswith(('in:', '!in:')):
            raise fault("Multiple values for 'member_of' must be prefixed "
                        "with the 'in:' or '!in:' keyword using the valid "
                        "microversion. Got: %s" % value, None)
        negated = value.startswith('!')
        body = value[1:] if negated else value
        names = body[3:].split(',') if body.startswith('in:') else [body]
        aggregates = set()
        for name in names:
            try:
                aggregates.add(validation.uuid(name, 'member_of'))
            except codes.Fault:
                raise fault("Invalid query string parameters: Expected "
                            "'member_of' parameter to contain valid "
                            "UUID(s). Got: %s" % name, None)
        if negated:
            if minor < 32:
                raise fault('Forbidden member_of%s parameters are not '
                            'supported in the specified microversion'
                            % label, None)
            forbidden |= aggregates
        else:
            member_of.append(frozenset(aggregates))
    return member_of, forbidden


def in_tree_value(text):
    try:
        return validation.uuid(text.strip(), 'in_tree')
    except codes.Fault:
        raise fault("Invalid query string parameters: Expected 'in_tree' "
                    "parameter to be a format of uuid. Got: %s" % text, None)
