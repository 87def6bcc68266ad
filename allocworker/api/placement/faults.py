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


# Placement's own sentence for these, in place of the caller's prefix.
PLACEMENT_WORDS = {
    codes.PROVIDER_GENERATION_CONFLICT.code:
        'resource provider generation conflict: %s',
}


def error(status, code, detail, prefix=''):
    placement_code = PLACEMENT_CODES.get(code, http.UNDEFINED_CODE)
    if code == codes.PROVIDER_IN_USE.code and 'child' in detail:
        placement_code = 'placement.resource_provider.cannot_delete_parent'
    if code in PLACEMENT_WORDS:
        return http.HTTPError(status, PLACEMENT_WORDS[code] % detail,
                              placement_code)
    return http.HTTPError(status, prefix + detail, placement_code)


def checked(item, prefix=''):
    """The item when it succeeded; else its HTTPError is raised. A provider
    that is not there is Placement's 404 sentence."""
    if item['status'] < 300:
        return item
    if item['status'] == codes.PROVIDER_NOT_FOUND.status and \
            item.get('code') == codes.PROVIDER_NOT_FOUND.code:
        raise http.not_found('No resource provider with uuid %s found'
                             % (item.get('uuid') or item['provider_uuid']))
    raise error(item['status'], item.get('code'), item['detail'], prefix)


def checked_write(item):
    """``checked`` for a write of a provider's traits or aggregates, whose
    generation conflict Placement words in its own way."""
    if item.get('code') == codes.PROVIDER_GENERATION_CONFLICT.code:
        raise http.conflict("Resource provider's generation already "
                            "changed. Please update the generation and try "
                            "again.", http.CONCURRENT_UPDATE)
    return checked(item)


def call(fn, *args, **kwargs):
    """A service-layer call whose whole-request faults become HTTPError."""
    try:
        return fn(*args, **kwargs)
    except codes.Fault as fault:
        raise error(fault.code.status, fault.code.code, fault.detail)
