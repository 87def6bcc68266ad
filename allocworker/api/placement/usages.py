"""``/resource_providers/{uuid}/usages`` and ``/usages`` (1.9)."""

from allocworker.api.placement import allocations as placement_allocations
from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker.api.placement import schemas
from allocworker.providers import rules as providers
from allocworker.allocations import usages

ALL_TYPES = 'all'


def of_provider(request, uuid):
    item, = faults.call(providers.get_usages, request.context, [uuid])
    faults.checked(item, sentence=faults.MISSING_USAGES)
    return http.Response(body={
        'resource_provider_generation': item['generation'],
        'usages': item['usages']}, cacheable=True)


def of_project(request):
    if not request.at_least(9):
        raise http.not_found()
    params = request.params(schemas.usages(request))
    found = faults.call(usages.by_project, request.context,
                        params['project_id'], params.get('user_id'))
    if not request.at_least(38):
        return http.Response(body={'usages': _summed(found)[1]},
                             cacheable=True)
    wanted = params.get('consumer_type')
    if wanted == ALL_TYPES:
        count, summed = _summed(found)
        body = {ALL_TYPES: dict(summed, consumer_count=count)} if found \
            else {}
    else:
        body = {}
        for entry in found:
            name = (entry['consumer_type'] or
                    placement_allocations.UNKNOWN_TYPE)
            if wanted is None or wanted == name:
                body[name] = dict(entry['usages'],
                                  consumer_count=entry['consumer_count'])
    return http.Response(body={'usages': body}, cacheable=True)


def _summed(found):
    """(consumers, {class: used}) over every consumer type."""
    total = {}
    for entry in found:
        for name, used in entry['usages'].items():
            total[name] = total.get(name, 0) + used
    return sum(e['consumer_count'] for e in found), total
