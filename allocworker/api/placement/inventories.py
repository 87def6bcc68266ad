"""``/resource_providers/{uuid}/inventories``: Placement's per-class and
whole-set writes, each mapped onto one replace-all ``set_inventories``
under the provider generation.

Placement lets an inventory shrink below what is allocated (design §5),
so every write here passes ``force=True``; removing a class that still
has allocations stays refused by the service layer.
"""

import collections

from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker.api.placement import providers as rp
from allocworker.api.placement import schemas
from allocworker import codes
from allocworker.providers import resource_classes
from allocworker.providers import rules as providers

# How each of Placement's inventory handlers words what can go wrong in
# its write: ``verb`` ("Unable to <verb> inventory for resource provider
# U: ..."), a generation that moved under it (``raced``), a class that
# does not exist (``unknown``, %s the class) and a class still allocated
# (``in_use``, %s Placement's InventoryInUse sentence, with the error
# code Placement gives it there).
Words = collections.namedtuple('Words',
                               'verb raced unknown in_use in_use_code')
_INUSE = 'placement.inventory.inuse'
_UNKNOWN = 'No such resource class %s.'


def _words(handler, uuid, resource_class=None):
    unable = 'Unable to %s inventory for resource provider ' + uuid + ': '
    deleting = 'Unable to delete inventory of class %s: ' % resource_class
    return {
        'create': Words('create', 'Update conflict: ' + faults.RACED,
                        unable % 'create' + _UNKNOWN, None, None),
        'update': Words('update', 'update conflict: ' + faults.RACED,
                        None, None, None),
        'replace': Words('update', 'resource provider generation conflict',
                         'Unknown resource class in inventory for resource '
                         'provider ' + uuid + ': ' + _UNKNOWN,
                         'update conflict: %s', _INUSE),
        'delete': Words('delete', deleting + faults.RACED, None,
                        deleting + '%s', http.CONCURRENT_UPDATE),
        'delete_all': Words(
            'delete', 'Unable to delete inventory for resource provider %s '
            'because the inventory was updated by another process. Please '
            'retry your request.' % uuid, None, '%s', _INUSE),
    }[handler]


def _body(generation, inventory):
    return dict(inventory, resource_provider_generation=generation)


def list_all(request, uuid):
    provider = rp.fetch(request, uuid, faults.MISSING_INVENTORIES)
    return http.Response(body={
        'resource_provider_generation': provider['generation'],
        'inventories': provider['inventories']}, cacheable=True)


def show(request, uuid, resource_class):
    provider = rp.fetch(request, uuid, faults.MISSING_INVENTORIES)
    inventory = provider['inventories'].get(resource_class)
    if inventory is None:
        raise http.not_found('No inventory of class %s for %s'
                             % (resource_class, uuid))
    return http.Response(body=_body(provider['generation'], inventory),
                         cacheable=True)


def _known(request, resource_class):
    """Whether the class exists: Placement words a missing inventory of a
    class that does not exist otherwise (only its refusals ask)."""
    return resource_class in {c['name'] for c in faults.call(
        resource_classes.list_resource_classes, request.context)}


def _check_reserved(request, uuid, inventories, verb):
    """Placement's own check of the inventories a request names: before
    1.26 an inventory had to keep some capacity (reserved below total),
    from 1.26 reserved may reach total."""
    for name, fields in inventories.items():
        reserved, total = fields.get('reserved', 0), fields['total']
        if request.at_least(26):
            if reserved <= total:
                continue
            how = 'greater than'
        elif reserved < total:
            continue
        else:
            how = 'greater than or equal to'
        raise http.bad_request(
            "Unable to %s inventory for resource provider %s: Invalid "
            "inventory for '%s' on resource provider '%s'. The reserved "
            "value is %s total." % (verb, uuid, name, uuid, how))


def _write(request, uuid, generation, inventories, words):
    """Replace the provider's inventories; the service item, or the
    HTTPError in Placement's ``words`` for the handler."""
    item, = providers.set_inventories(request.context, uuid, generation,
                                      inventories, force=True)
    code = item.get('code')
    if code == codes.PROVIDER_GENERATION_CONFLICT.code:
        raise http.conflict(words.raced, http.CONCURRENT_UPDATE)
    name = faults.unknown_class(item.get('detail'))
    if code == codes.RESOURCE_CLASS_NOT_FOUND.code and name and \
            words.unknown:
        raise http.bad_request(words.unknown % name)
    held = faults.in_use(item.get('detail'))
    if code == codes.INVENTORY_IN_USE.code and held and words.in_use:
        raise http.conflict(words.in_use % held, words.in_use_code)
    return faults.checked(item, 'Unable to %s inventory for resource '
                                'provider %s: ' % (words.verb, uuid))


def create(request, uuid):
    provider = rp.fetch(request, uuid)
    data = request.json(schemas.post_inventory())
    name = data.pop('resource_class')
    _check_reserved(request, uuid, {name: data}, 'create')
    current = dict(provider['inventories'])
    if name in current:
        # Placement's sentence here is its database's duplicate-key error.
        raise http.conflict('Update conflict: inventory of %s already '
                            'exists on resource provider %s' % (name, uuid),
                            http.CONCURRENT_UPDATE)
    current[name] = data
    item = _write(request, uuid, provider['generation'], current,
                  _words('create', uuid))
    return http.Response(
        201, _body(item['generation'], item['inventories'][name]),
        [('Location', rp.url(uuid, 'inventories', name))], cacheable=True)


def update(request, uuid, resource_class):
    provider = rp.fetch(request, uuid)
    data = request.json(schemas.put_inventory())
    generation = data.pop('resource_provider_generation')
    if generation != provider['generation']:
        raise http.conflict('resource provider generation conflict',
                            http.CONCURRENT_UPDATE)
    _check_reserved(request, uuid, {resource_class: data}, 'update')
    current = dict(provider['inventories'])
    if resource_class not in current:
        if not _known(request, resource_class):
            raise http.not_found(_UNKNOWN % resource_class)
        raise http.bad_request(
            'No inventory record with resource class for resource provider '
            '%s: No inventory of class %s found.' % (uuid, resource_class))
    current[resource_class] = data
    item = _write(request, uuid, generation, current,
                  _words('update', uuid))
    return http.Response(body=_body(item['generation'],
                                    item['inventories'][resource_class]),
                         cacheable=True)


def delete(request, uuid, resource_class):
    provider = rp.fetch(request, uuid)
    current = dict(provider['inventories'])
    if current.pop(resource_class, None) is None:
        gone = 'No inventory of class %s found for delete' % resource_class
        why = gone if _known(request, resource_class) else \
            _UNKNOWN % resource_class
        raise http.not_found('%s: %s' % (gone, why))
    _write(request, uuid, provider['generation'], current,
           _words('delete', uuid, resource_class))
    return http.Response(204)


def replace_all(request, uuid):
    data = request.json(schemas.put_inventories())
    _check_reserved(request, uuid, data['inventories'], 'update')
    item = _write(request, uuid, data['resource_provider_generation'],
                  data['inventories'], _words('replace', uuid))
    return http.Response(body={
        'resource_provider_generation': item['generation'],
        'inventories': item['inventories']}, cacheable=True)


def delete_all(request, uuid):
    if not request.at_least(5):
        # Placement refuses with WebOb's bare 405: no message, no Allow.
        raise http.HTTPError(405, '')
    provider = rp.fetch(request, uuid)
    _write(request, uuid, provider['generation'], {},
           _words('delete_all', uuid))
    return http.Response(204)
