"""``get_allocation_candidates`` (RPC 1.3): where one consumer's request
would fit, as design §3's items, read in one snapshot.

``parse`` and ``find`` are what ``claims`` shares with it: the request
as the RPC contract spells it, and its candidates in the contract's shape
(``root_uuid``, ``allocations``, ``mappings``, ``providers``).
"""

from allocworker import codes
from allocworker.conf import CONF
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
    wanted = scheduling_candidates.scoped(context, wanted)
    with db.snapshot() as conn:
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


def find(conn, wanted, limit=None):
    """The candidates of ``wanted`` read in ``conn``, each in the
    contract's shape; its summaries name the providers it allocates
    from."""
    found = scheduling_candidates.find(wanted, limit, conn=conn)
    # Read only: candidates on one host share its providers' summaries.
    summaries = {uuid: _summary(summary)
                 for uuid, summary in found.providers.items()}
    return _shaped(found, summaries)


def windows(conn, wanted, strategy, roots=None):
    """(candidates, {provider uuid: id}) of ``wanted``, the candidates as
    ``find``'s but summarizing only the capacity and usage of the
    providers they use, plus ``tree_free`` (the room left in the
    candidate's tree per class) and ``tree_used`` (the units used in it,
    every class together, to tell later whether anyone placed there
    since), a window of roots at a time in
    ``strategy``'s order (``scheduling/windows.py``), lazily; only
    ``roots`` (ids) when it is not None."""
    for found in scheduling_candidates.windowed(
            conn, wanted, strategy, CONF.scheduling.window_size, roots):
        shaped = _shaped(found)
        for candidate in shaped:
            candidate['tree_free'] = found.tree_free[candidate['root_uuid']]
            candidate['tree_used'] = found.tree_used[candidate['root_uuid']]
        yield shaped, found.ids


def _shaped(found, summaries=None):
    """The candidates in the contract's shape; their providers'
    summaries from ``summaries`` {uuid: summary} when given, else each
    its own (a claim moves them as it places, ``reuse``)."""
    if summaries is None:
        def summary(uuid):
            return _summary(found.providers[uuid])
    else:
        summary = summaries.__getitem__
    return [{'root_uuid': c.root_uuid, 'allocations': c.allocations,
             'mappings': c.mappings,
             'providers': {uuid: summary(uuid) for uuid in c.allocations}}
            for c in found.candidates]


def _summary(summary):
    return {'capacity': {name: r['capacity']
                         for name, r in summary.resources.items()},
            'used': {name: r['used']
                     for name, r in summary.resources.items()},
            'traits': list(summary.traits)}
