"""Service-layer outcomes as Placement's HTTP errors: the status of the
item, its detail sentence, and Placement's error code for it."""

from allocworker.api.placement import http
from allocworker import codes

PLACEMENT_CODES = {
    codes.PROVIDER_GENERATION_CONFLICT.code: http.CONCURRENT_UPDATE,
    codes.CONSUMER_GENERATION_CONFLICT.code: http.CONCURRENT_UPDATE,
    codes.PROVIDER_CONCURRENT_UPDATE.code: http.CONCURRENT_UPDATE,
    codes.INVENTORY_IN_USE.code: 'placement.inventory.inuse',
    codes.PROVIDER_IN_USE.code: 'placement.resource_provider.inuse',
}


def error(status, code, detail, prefix=''):
    placement_code = PLACEMENT_CODES.get(code, http.UNDEFINED_CODE)
    if code == codes.PROVIDER_IN_USE.code and 'child' in detail:
        placement_code = 'placement.resource_provider.cannot_delete_parent'
    return http.HTTPError(status, prefix + detail, placement_code)


def checked(item, prefix=''):
    """The item when it succeeded; else its HTTPError is raised."""
    if item['status'] >= 300:
        raise error(item['status'], item.get('code'), item['detail'], prefix)
    return item


def call(fn, *args, **kwargs):
    """A service-layer call whose whole-request faults become HTTPError."""
    try:
        return fn(*args, **kwargs)
    except codes.Fault as fault:
        raise error(fault.code.status, fault.code.code, fault.detail)
