"""Service-layer outcomes as Placement's HTTP errors: the status of the
item, Placement's message for it, and Placement's error code for it.

Only Placement's own message is built here; ``http`` puts WebOb's
paragraph for the status before it, as Placement's answers have it.
"""

import re

from allocworker.api.placement import http
from allocworker import codes

PLACEMENT_CODES = {
    codes.PROVIDER_GENERATION_CONFLICT.code: http.CONCURRENT_UPDATE,
    codes.CONSUMER_GENERATION_CONFLICT.code: http.CONCURRENT_UPDATE,
    codes.PROVIDER_CONCURRENT_UPDATE.code: http.CONCURRENT_UPDATE,
    codes.INVENTORY_IN_USE.code: 'placement.inventory.inuse',
    codes.PROVIDER_IN_USE.code: 'placement.resource_provider.inuse',
}

# What Placement says when a provider's generation moved under a write
# it made from its own read: its ResourceProviderConcurrentUpdateDetected.
RACED = ('Another thread concurrently updated the resource provider data. '
         'Please retry your update')

# Placement's own sentence for these, in place of the caller's prefix.
PLACEMENT_WORDS = {
    codes.PROVIDER_GENERATION_CONFLICT.code: RACED,
}

# Placement's handlers say a provider is not there in their own ways (a
# malformed uuid is one that is not there); each names the uuid as given.
MISSING = 'No resource provider with uuid %(uuid)s found'
MISSING_FOR_DELETE = MISSING + ' for delete'
MISSING_INVENTORIES = MISSING + ' : ' + MISSING
MISSING_USAGES = MISSING + ': ' + MISSING
MISSING_TRAITS = MISSING_USAGES
MISSING_ALLOCATIONS = "Resource provider '%(uuid)s' not found: " + MISSING

# An allocation write the service layer refused, in Placement's words, by
# the item's code: (what finds the class and provider in the item's
# detail, Placement's sentence). Placement names one class and provider;
# the detail names them in its path ("items[0].allocations.<uuid>.<class>")
# or its sentence. An unknown class is worded by each handler its own way.
_AT = re.compile(r'allocations\.(?P<provider>[0-9a-fA-F-]{36})\.'
                 r'(?P<resource_class>[A-Z0-9_]+):')
_OVER = re.compile(r'(?P<resource_class>[A-Z0-9_]+) on provider '
                   r'(?P<provider>[0-9a-fA-F-]{36}) would be')
_ABSENT = re.compile(r"resource provider '(?P<provider>[^']+)'")
_UNKNOWN = re.compile(r'No such resource class (?P<resource_class>\S+)')
_NOT_ALLOCATED = ("Unable to allocate inventory: Unable to create allocation "
                  "for '%(resource_class)s' on resource provider "
                  "'%(provider)s'. The requested amount would ")
ALLOCATION_REFUSALS = {
    codes.INVENTORY_NOT_FOUND.code: (
        _AT, "Unable to allocate inventory: Inventory for "
             "'%(resource_class)s' on resource provider '%(provider)s' "
             "invalid."),
    codes.ALLOCATION_UNIT_VIOLATION.code: (
        _AT, _NOT_ALLOCATED + 'violate inventory constraints.'),
    codes.CAPACITY_EXCEEDED.code: (
        _OVER, _NOT_ALLOCATED + 'exceed the capacity.'),
    codes.PROVIDER_NOT_IN_BODY.code: (
        _ABSENT, "Allocation for resource provider '%(provider)s' that "
                 "does not exist."),
    codes.RESOURCE_CLASS_NOT_FOUND.code: (_UNKNOWN, None),
}


# The head of the service layer's sentence for a class still allocated is
# Placement's whole InventoryInUse sentence (less its full stop).
_IN_USE = re.compile(r"Inventory for '[^']*' on resource provider "
                     r"'[^']*' in use")


def in_use(detail):
    """Placement's sentence for inventory still allocated, from the
    service layer's ``detail``; None when it is not that."""
    found = _IN_USE.search(detail or '')
    return found.group(0) + '.' if found else None


def unknown_class(detail):
    """The class a "No such resource class" ``detail`` names, or None."""
    found = _UNKNOWN.search(detail or '')
    return found.group('resource_class') if found else None


def missing(provider_uuid, sentence=MISSING):
    return http.not_found(sentence % {'uuid': provider_uuid})


def error(status, code, detail, prefix=''):
    placement_code = PLACEMENT_CODES.get(code, http.UNDEFINED_CODE)
    if code == codes.PROVIDER_IN_USE.code and 'child' in detail:
        placement_code = 'placement.resource_provider.cannot_delete_parent'
    if code in PLACEMENT_WORDS:
        return http.HTTPError(status, PLACEMENT_WORDS[code], placement_code)
    return http.HTTPError(status, prefix + detail, placement_code)


def allocation_refused(answer, unknown_class, prefix):
    """Placement's error for a refused allocation item. ``unknown_class``
    words a class that does not exist (with %(resource_class)s and
    %(consumer)s), as the handler does; a refusal Placement has no words
    for is ``prefix`` and the item's detail."""
    code = answer.get('code')
    finder, sentence = ALLOCATION_REFUSALS.get(code, (None, None))
    found = finder.search(answer['detail']) if finder else None
    if found is None:
        return error(answer['status'], code, answer['detail'], prefix)
    names = dict(found.groupdict(), consumer=answer.get('consumer_uuid'))
    return http.HTTPError(answer['status'], (sentence or unknown_class) %
                          names, PLACEMENT_CODES.get(code,
                                                     http.UNDEFINED_CODE))


def checked(item, prefix='', sentence=MISSING):
    """The item when it succeeded; else its HTTPError is raised. A provider
    that is not there is Placement's 404 ``sentence``."""
    if item['status'] < 300:
        return item
    if item['status'] == codes.PROVIDER_NOT_FOUND.status and \
            item.get('code') == codes.PROVIDER_NOT_FOUND.code:
        raise missing(item.get('uuid') or item['provider_uuid'], sentence)
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
