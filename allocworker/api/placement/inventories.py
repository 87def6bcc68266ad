"""``/resource_providers/{uuid}/inventories``: Placement's per-class and
whole-set writes, each mapped onto one replace-all ``set_inventories``
under the provider generation.

Placement lets an inventory shrink below what is allocated (design §5),
so every write here passes ``force=True``; removing a class that still
has allocations stays refused by the service layer.
"""

import re

from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker.api.placement import providers as rp
from allocworker.api.placement import schemas
from allocworker import codes
from allocworker.providers import rules as providers


def _body(generation, inventory):
    return dict(inventory, resource_provider_generation=generation)


def list_all(request, uuid):
    provider = rp.fetch(request, uuid)
    return http.Response(body={
        'resource_provider_generation': provider['generation'],
        'inventories': provider['inventories']}, cacheable=True)


def show(request, uuid, resource_class):
    provider = rp.fetch(request, uuid)
    inventory = provider['inventories'].get(resource_class)
    if inventory is None:
        raise http.not_found('No inventory of class %s for %s'
                             % (resource_class, uuid))
    return http.Response(body=_body(provider['generation'], inventory),
                         cacheable=True)


def _check_reserved(request, uuid, inventories, verb):
    """Before 1.26 an inventory had to keep some capacity (reserved below
    total); the service layer's own rule, reserved up to total, is 1.26's."""
    if request.at_least(26):
        return
    for name, fields in sorted(inventories.items()):
        if fields.get('reserved', 0) >= fields['total']:
            raise http.bad_request(
                "Unable to %s inventory for resource provider %s: Invalid "
                "inventory for '%s' on resource provider '%s'. The reserved "
                "value is greater than or equal to total."
                % (verb, uuid, name, uuid))


# The service layer's sentence for a class still allocated, whose head
# is Placement's own; clients match on it (osc-placement on the whole
# "update conflict: ..." sentence, Nova's report client on the head).
_IN_USE = re.compile(r"Inventory for '[^']*' on resource provider "
                     r"'[^']*' in use")


def _write(request, uuid, generation, inventories, verb, in_use=None):
    """Replace the provider's inventories; the service item. ``in_use``
    words a class still allocated as Placement does for this request
    (with %s for Placement's sentence)."""
    _check_reserved(request, uuid, inventories, verb)
    item, = providers.set_inventories(request.context, uuid, generation,
                                      inventories, force=True)
    if item.get('code') == 'resource_class.not_found':
        raise http.bad_request('Unknown resource class in inventory for '
                               'resource provider %s: %s'
                               % (uuid, item['detail']))
    found = _IN_USE.search(item.get('detail') or '')
    if item.get('code') == codes.INVENTORY_IN_USE.code and found:
        raise faults.error(item['status'], item['code'],
                           (in_use or 'update conflict: %s') % (
                               found.group(0) + '.'))
    prefix = ('Unable to %s inventory for resource provider %s: '
              % (verb, uuid))
    return faults.checked(item, prefix)


def create(request, uuid):
    data = request.json(schemas.post_inventory())
    provider = rp.fetch(request, uuid)
    name = data.pop('resource_class')
    current = dict(provider['inventories'])
    if name in current:
        raise http.conflict('Update conflict: inventory of %s already '
                            'exists on resource provider %s' % (name, uuid))
    current[name] = data
    item = _write(request, uuid, provider['generation'], current, 'create')
    return http.Response(
        201, _body(item['generation'], item['inventories'][name]),
        [('Location', rp.url(uuid, 'inventories', name))], cacheable=True)


def update(request, uuid, resource_class):
    data = request.json(schemas.put_inventory())
    generation = data.pop('resource_provider_generation')
    _check_reserved(request, uuid, {resource_class: data}, 'update')
    provider = rp.fetch(request, uuid)
    current = dict(provider['inventories'])
    if resource_class not in current:
        raise http.bad_request(
            'No inventory record with resource class %s for resource '
            'provider %s' % (resource_class, uuid))
    current[resource_class] = data
    item = _write(request, uuid, generation, current, 'update')
    return http.Response(body=_body(item['generation'],
                                    item['inventories'][resource_class]),
                         cacheable=True)


def delete(request, uuid, resource_class):
    provider = rp.fetch(request, uuid)
    current = dict(provider['inventories'])
    if current.pop(resource_class, None) is None:
        raise http.not_found('No inventory of class %s found for delete'
                             % resource_class)
    _write(request, uuid, provider['generation'], current, 'delete',
           'Unable to delete inventory of class %s: %%s' % resource_class)
    return http.Response(204)


def replace_all(request, uuid):
    data = request.json(schemas.put_inventories())
    item = _write(request, uuid, data['resource_provider_generation'],
                  data['inventories'], 'update')
    return http.Response(body={
        'resource_provider_generation': item['generation'],
        'inventories': item['inventories']}, cacheable=True)


def delete_all(request, uuid):
    if not request.at_least(5):
        raise http.HTTPError(
            405, 'The method specified is not allowed for this resource.',
            headers=[('Allow', 'GET, POST, PUT')])
    provider = rp.fetch(request, uuid)
    _write(request, uuid, provider['generation'], {}, 'delete', '%s')
    return http.Response(204)
