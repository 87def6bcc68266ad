"""``GET /allocation_candidates`` (1.10): the unnumbered request group
(``resources``, ``required``, ``member_of``, ``in_tree``, ``limit``).
Numbered groups (``resources1`` ...) are refused with a 400 that says so.
"""

from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker.api.placement import query
from allocworker.scheduling import candidates

_KNOWN = {'resources': 10, 'limit': 16, 'required': 17, 'member_of': 21,
          'in_tree': 31}


def list_candidates(request):
    if not request.at_least(10):
        raise http.not_found('The resource could not be found.')
    for name in request.query:
        since = _KNOWN.get(name)
        if since is None or not request.at_least(since):
            raise http.bad_request('Invalid query string parameters: '
                                   '%s is not a parameter allocworker '
                                   'understands here' % name)
    if 'resources' not in request.query:
        raise http.bad_request("Invalid query string parameters: "
                               "'resources' is a required property")
    resources = query.resources(request.query['resources'][-1])
    required, forbidden = query.traits(request,
                                       request.query.get('required', []))
    limit = request.query.get('limit')
    item, = faults.call(
        candidates.allocation_candidates, request.context, resources,
        required, forbidden,
        query.member_of(request.query.get('member_of', [])),
        request.query.get('in_tree', [None])[-1],
        int(limit[-1]) if limit else None)
    return http.Response(body={
        'allocation_requests': [_request(request, r)
                                for r in item['allocation_requests']],
        'provider_summaries': {
            uuid: _summary(request, s, resources)
            for uuid, s in item['provider_summaries'].items()}},
        cacheable=True)


def _request(request, wanted):
    if not request.at_least(12):
        return {'allocations': [
            {'resource_provider': {'uuid': uuid}, 'resources': resources}
            for uuid, resources in sorted(wanted.items())]}
    body = {'allocations': {uuid: {'resources': resources}
                            for uuid, resources in wanted.items()}}
    if request.at_least(34):
        body['mappings'] = {'': sorted(wanted)}
    return body


def _summary(request, summary, resources):
    body = {'resources': {
        name: usage for name, usage in summary['resources'].items()
        if request.at_least(27) or name in resources}}
    if request.at_least(17):
        body['traits'] = summary['traits']
    if request.at_least(29):
        body['parent_provider_uuid'] = summary['parent_uuid']
        body['root_provider_uuid'] = summary['root_uuid']
    return body
