"""``/resource_providers/{uuid}/aggregates`` (1.1; with the provider
generation from 1.19)."""

from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker.api.placement import providers as rp
from allocworker.api.placement import schemas
from allocworker.providers import aggregates


def _since(request):
    if not request.at_least(1):
        raise http.not_found()


def _body(request, item):
    body = {'aggregates': item['aggregates']}
    if request.at_least(19):
        body['resource_provider_generation'] = item['generation']
    return body


def of_provider(request, uuid):
    _since(request)
    item, = aggregates.get_provider_aggregates(request.context, uuid)
    return http.Response(body=_body(request, faults.checked(item)),
                         cacheable=True)


def set_for_provider(request, uuid):
    _since(request)
    rp.fetch(request, uuid)
    data = request.json(schemas.put_aggregates(request))
    if request.at_least(19):
        generation, wanted = (data['resource_provider_generation'],
                              data['aggregates'])
    else:
        generation, wanted = None, data
    item, = aggregates.set_provider_aggregates(request.context, uuid,
                                               generation, wanted)
    # Placement echoes the aggregates in the order they were sent.
    item = dict(faults.checked_write(item), aggregates=wanted)
    return http.Response(body=_body(request, item), cacheable=True)
