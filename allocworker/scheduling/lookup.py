"""``get_allocation_candidates`` (RPC 1.3): where one consumer's request
would fit, as design §3's items, read in one snapshot.

``parse`` and ``find`` are what ``claims`` shares with it: the request
as the RPC contract spells it, and its candidates in the contract's shape
(``root_uuid``, ``allocations``, ``mappings``, ``providers``).
"""

from allocworker import codes
from allocworker import policy
from allocworker.db import api as db
from allocworker.scheduling import candidates as scheduling_candidates
from allocworker import validation


def get_allocation_candidates(context, request, limit=1000):
    """One 200 item per candidate; none when nothing fits."""
    wanted = parse(request, 'request')
    validation.integer(limit, 'limit', minimum=1)
    policy.check(context, 'get_allocation_candidates',
                 'allocation candidates')
    with db.reader() as conn:
        found = find(conn, wanted, limit)
    return [dict(candidate, status=200) for candidate in found]


def requested_classes(raw):
    """Every resource class a parsed request's groups name."""
    return {name for group in raw['groups'] for name in group['resources']}


# -- interim: until scheduling/request.py lands --------------------------
# The unnumbered group only, through the shim's candidate search; replaced
# by request.parse_request and candidates.find (one rule, one place).

def parse(raw, where):
    """The request ``raw`` checked; a Fault naming the field otherwise."""
    validation.mapping(raw, where)
    groups = validation.required(raw, where, 'groups')
    if not isinstance(groups, list) or not groups:
        raise validation.invalid('%s.groups must be a non-empty list'
                                 % where)
    for index, group in enumerate(groups):
        at = '%s.groups[%d]' % (where, index)
        validation.mapping(group, at)
        resources = validation.mapping(
            validation.required(group, at, 'resources'), at + '.resources')
        if not resources:
            raise validation.invalid('%s.resources must name at least one '
                                     'resource class' % at)
        for name, amount in resources.items():
            validation.resource_class(name, at + '.resources key')
            validation.integer(amount, '%s.resources.%s' % (at, name),
                               minimum=1)
    return raw


def find(conn, wanted, limit=None):
    group = wanted['groups'][0]
    required = [t for t in group.get('required', ()) if t[0] != '!']
    forbidden = [t[1:] for t in group.get('required', ()) if t[0] == '!']
    try:
        found, = scheduling_candidates.allocation_candidates(
            None, group['resources'], required, forbidden,
            [{a} for a in group.get('member_of', ())],
            group.get('in_tree'), limit)
    except codes.Fault:
        raise
    summaries = found['provider_summaries']
    result = []
    for allocations in found['allocation_requests']:
        roots = [summaries[u]['root_uuid'] for u in sorted(allocations)
                 if 'MISC_SHARES_VIA_AGGREGATE' not in
                 summaries[u]['traits']]
        result.append({
            'root_uuid': roots[0],
            'allocations': allocations,
            'mappings': {'0': sorted(allocations)},
            'providers': {u: {
                'capacity': {n: r['capacity'] for n, r in
                             summaries[u]['resources'].items()},
                'used': {n: r['used'] for n, r in
                         summaries[u]['resources'].items()},
                'traits': summaries[u]['traits']} for u in allocations}})
    return result
