"""``POST /reshaper`` (1.30): inventories and allocations in one
transaction."""

from allocworker.api.placement import allocations as placement_allocations
from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker.api.placement import schemas
from allocworker.allocations import reshaper


def reshape(request):
    if not request.at_least(30):
        raise http.not_found('The resource could not be found.')
    data = request.json(schemas.reshaper(request))
    inventories = {uuid: {'provider_generation':
                          part['resource_provider_generation'],
                          'inventories': part['inventories']}
                   for uuid, part in data['inventories'].items()}
    wanted = {}
    for raw_uuid, fields in data['allocations'].items():
        uuid = placement_allocations.consumer(raw_uuid)
        wanted[uuid] = placement_allocations.item(request, uuid, fields)
    answers = faults.call(reshaper.reshape, request.context, inventories,
                          list(wanted.values()))
    failed = [a for a in answers if a['status'] != 200]
    if failed:
        raise placement_allocations.error(wanted, failed)
    return http.Response(204)
