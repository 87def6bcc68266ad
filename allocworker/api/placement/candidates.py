"""``GET /allocation_candidates`` (1.10+): the query string parsed by
``scheduling/request.py`` at the request's microversion, the search by
``scheduling/candidates.py``, the answer rendered as Placement renders it
at that microversion."""

from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker import codes
from allocworker.scheduling import candidates
from allocworker.scheduling import placement_query

# Placement's error codes for the query refusals that carry one.
QUERY_CODES = {'bad_value': 'placement.query.bad_value',
               'missing_value': 'placement.query.missing_value',
               'duplicate_key': 'placement.query.duplicate_key'}


def parsed(query, minor):
    """(Request, limit) from the query string, or Placement's 400."""
    try:
        return placement_query.parse_query(query, minor)
    except codes.Fault as fault:
        raise http.bad_request(fault.detail, QUERY_CODES.get(
            fault.fields.get('reason'), http.UNDEFINED_CODE))


def list_candidates(request):
    if not request.at_least(10):
        raise http.not_found()
    minor = request.version[1]
    wanted, limit = parsed(request.query, minor)
    try:
        found = faults.call(candidates.allocation_candidates,
                            request.context, wanted, limit,
                            nested=minor >= 29)
    except http.HTTPError as error:
        if 'resource class' in error.detail:
            error.detail = ('Invalid resource class in resources parameter: '
                            '%s' % error.detail)
        raise
    classes = set().union(*(g.resources for g in wanted.groups))
    return http.Response(body={
        'allocation_requests': [_candidate(minor, c)
                                for c in found.candidates],
        'provider_summaries': {
            uuid: _summary(minor, summary, classes)
            for uuid, summary in found.providers.items()}},
        cacheable=True)


def _candidate(minor, candidate):
    if minor < 12:
        return {'allocations': [
            {'resource_provider': {'uuid': uuid}, 'resources': resources}
            for uuid, resources in sorted(candidate.allocations.items())]}
    body = {'allocations': {uuid: {'resources': resources}
                            for uuid, resources in
                            candidate.allocations.items()}}
    if minor >= 34:
        body['mappings'] = candidate.mappings
    return body


def _summary(minor, summary, classes):
    body = {'resources': {
        name: usage for name, usage in summary.resources.items()
        if minor >= 27 or name in classes}}
    if minor >= 17:
        body['traits'] = summary.traits
    if minor >= 29:
        body['parent_provider_uuid'] = summary.parent_uuid
        body['root_provider_uuid'] = summary.root_uuid
    return body
