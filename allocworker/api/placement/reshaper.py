"""``POST /reshaper`` (1.30): inventories and allocations in one
transaction."""

import uuid as uuidlib

from allocworker.api.placement import allocations as placement_allocations
from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker.api.placement import schemas
from allocworker.allocations import reshaper
from allocworker import codes


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
    try:
        answers = reshaper.reshape(request.context, inventories,
                                   list(wanted.values()))
    except codes.Fault as fault:
        raise _whole_request_error(fault, data['inventories'])
    failed = [a for a in answers if a['status'] != 200]
    if failed:
        raise placement_allocations.error(wanted, failed)
    return http.Response(204)


def _whole_request_error(fault, inventories):
    """Placement's words for a fault of the inventories part."""
    uuid = fault.fields.get('uuid')
    if fault.code is codes.PROVIDER_GENERATION_CONFLICT and uuid:
        given = next(part['resource_provider_generation']
                     for raw, part in inventories.items()
                     if http.is_uuid(raw) and
                     str(uuidlib.UUID(raw)) == uuid)
        return http.conflict(
            'resource provider generation conflict for provider %s: '
            'actual: %s, given: %s' % (uuid, fault.fields['generation'],
                                       given), http.CONCURRENT_UPDATE)
    if fault.code is codes.PROVIDER_NOT_FOUND:
        return http.bad_request(
            'Resource provider %s in inventories not found: %s'
            % (uuid, fault.detail), 'placement.resource_provider.not_found')
    return faults.error(fault.code.status, fault.code.code, fault.detail)
