"""``POST /reshaper`` (1.30): inventories and allocations in one
transaction."""

import uuid as uuidlib

from allocworker.api.placement import allocations as placement_allocations
from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker.api.placement import schemas
from allocworker.allocations import reshaper
from allocworker import codes

# Placement reads a class that does not exist as malformed reshaper data.
UNKNOWN_CLASS = 'malformed reshaper data: No such resource class ' \
    '%(resource_class)s.'


def reshape(request):
    if not request.at_least(30):
        raise http.not_found()
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
        raise placement_allocations.error(wanted, failed, UNKNOWN_CLASS)
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
            % (uuid, faults.MISSING % {'uuid': uuid}),
            'placement.resource_provider.not_found')
    name = faults.unknown_class(fault.detail)
    if fault.code is codes.RESOURCE_CLASS_NOT_FOUND and name:
        return http.bad_request(UNKNOWN_CLASS % {'resource_class': name})
    held = faults.in_use(fault.detail)
    if fault.code is codes.INVENTORY_IN_USE and held:
        return faults.error(fault.code.status, fault.code.code, held,
                            'update conflict: ')
    return faults.error(fault.code.status, fault.code.code, fault.detail)
