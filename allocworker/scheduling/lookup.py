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
from allocworker.scheduling import request as scheduling_request
from allocworker import validation


def get_allocation_candidates(context, request, limit=1000):
    """One 200 item per candidate; none when nothing fits."""
    wanted = parse(request)
    validation.integer(limit, 'limit', minimum=1)
    policy.check(context, 'get_allocation_candidates',
                 'allocation candidates')
    with db.reader() as conn:
        found = find(conn, wanted, limit)
    return [dict(candidate, status=200) for candidate in found]


def parse(raw, where=None):
    """The parsed request; its faults name the field, under ``where``
    (an item's place in a call) when given."""
    try:
        return scheduling_request.parse_request(raw)
    except codes.Fault as fault:
        if where is None:
            raise
        raise codes.Fault(fault.code, '%s.%s' % (where, fault.detail))


def requested_classes(wanted):
    """Every resource class a parsed request's groups name."""
    return {name for group in wanted.groups for name in group.resources}


# -- interim: until candidates.find lands ---------------------------------
# The unnumbered group only, through the shim's candidate search; replaced
# by candidates.find (one rule, one place).

def find(conn, wanted, limit=None):
    group = wanted.groups[0]
    found, = scheduling_candidates.allocation_candidates(
        None, group.resources, group.required, group.forbidden,
        group.member_of, group.in_tree, limit)
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
