"""Placement's query string for ``GET /allocation_candidates`` and the
filters of ``GET /resource_providers``, parsed into the request syntax's
``Request`` and ``Group`` (``request.py``).

``parse_query(params, minor)`` -> ``(Request, limit or None)``
    ``params`` is the query string as ``{name: [value, ...]}`` (what
    ``urllib.parse.parse_qs(..., keep_blank_values=True)`` returns);
    ``minor`` is the microversion's minor number (1.``minor``), which
    decides the parameters accepted, as Placement's handler does. The
    unnumbered group is labelled ``""``, a numbered one by its suffix.
    Errors raise ``Fault(INVALID_REQUEST)`` with Placement's wording and
    a field ``reason`` (``bad_value``, ``missing_value``,
    ``duplicate_key`` or None) the REST shim turns into Placement's error
    code.
``provider_filters(params, minor)`` -> ``Group``: ``resources``,
    ``required``, ``member_of`` and ``in_tree`` as one single-provider
    group labelled ``""``.
"""

import re

import jsonschema

from allocworker import codes
from allocworker.scheduling import request
from allocworker import validation

_PREFIXES = ('resources', 'required', 'member_of', 'in_tree')
_NUMBERED = r'[1-9][0-9]*'
_SUFFIXED = r'[a-zA-Z0-9_-]{1,64}'


def fault(detail, reason='bad_value'):
    """A 400 for the query string; ``reason`` picks Placement's code."""
    return codes.Fault(codes.INVALID_REQUEST, detail, reason=reason)


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
    properties['group_policy'] = {'type': 'string',
                                  'enum': list(request.POLICIES)}
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
    subtrees = tuple(tuple(sorted(index[s] for s in subtree))
                     for subtree in subtrees)
    return request.Request(tuple(groups), policy, subtrees, root_required,
                           root_forbidden), limit


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
            request.add_any(required, any_traits, names)
    member_of, forbidden_aggs = member_of_values(
        values.get('member_of', []), minor, label)
    in_tree = None
    if 'in_tree' in values:
        in_tree = in_tree_value(values['in_tree'][-1])
    single = label != '' if single is None else single
    return request.group(label, single, resources, required, any_traits,
                         forbidden, member_of, forbidden_aggs, in_tree)


def _check_groups(groups, subtrees, minor):
    """Placement's checks of the groups as a whole, in its order and
    words: from 1.36 resourceless groups must be named in
    ``same_subtree``; before it every group needs resources; from 1.22 a
    group may not both require and forbid a trait."""
    if minor >= 36:
        _check_resourceless(groups, subtrees)
    else:
        _check_every_group_has_resources(groups)
    if minor >= 22:
        _check_no_trait_both_ways(groups)


def _check_resourceless(groups, subtrees):
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
    labels = [g.label for g in groups]
    bad = [s for subtree in subtrees for s in sorted(subtree)
           if s not in labels]
    if bad:
        raise fault('Real suffixes should be specified in '
                    '`same_subtree`: %s not found in %s.' % (bad, labels))


def _check_every_group_has_resources(groups):
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


def _check_no_trait_both_ways(groups):
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
