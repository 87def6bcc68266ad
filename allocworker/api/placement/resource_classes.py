"""``/resource_classes``: list, show, create, rename (PUT, 1.2 to 1.6) and
delete (1.2), and the idempotent PUT that creates one from 1.7."""

from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker.api.placement import schemas
from allocworker import codes
from allocworker.providers import resource_classes


def _url(name):
    return '/resource_classes/%s' % name


def _representation(name):
    return {'name': name, 'links': [{'rel': 'self', 'href': _url(name)}]}


def _names(request):
    return [i['name'] for i in faults.call(
        resource_classes.list_resource_classes, request.context)]


def _since(request, minor):
    if not request.at_least(minor):
        raise http.not_found()


def list_classes(request):
    _since(request, 2)
    return http.Response(body={'resource_classes': [
        _representation(n) for n in _names(request)]}, cacheable=True)


def show(request, name):
    _since(request, 2)
    if name not in _names(request):
        raise http.not_found('No such resource class %s.' % name)
    return http.Response(body=_representation(name), cacheable=True)


def _create(request, name):
    http.validate({'name': name}, schemas.resource_class())
    item, = resource_classes.create_resource_class(request.context, name)
    if item.get('code') == 'invalid_request':
        raise http.bad_request(item['detail'])
    return faults.checked(item)['created']


def create(request):
    _since(request, 2)
    name = request.json(schemas.resource_class())['name']
    if not _create(request, name):
        raise http.conflict('Conflicting resource class already exists: %s'
                            % name)
    return http.Response(201, None, [('Location', _url(name))])


def update(request, name):
    _since(request, 2)
    if not request.at_least(7):
        return _rename(request, name)
    created = _create(request, name)
    return http.Response(201 if created else 204, None,
                         [('Location', _url(name))])


def _rename(request, name):
    new_name = request.json(schemas.resource_class())['name']
    item, = resource_classes.rename_resource_class(request.context, name,
                                                   new_name)
    if item['status'] == 404:
        raise http.not_found('No such resource class %s.' % name)
    if item['status'] == 400:
        raise http.bad_request('Cannot update standard resource class %s'
                               % name)
    return http.Response(body=_representation(faults.checked(item)['name']))


def delete(request, name):
    _since(request, 2)
    item, = resource_classes.delete_resource_class(request.context, name)
    if item['status'] == 404:
        raise http.not_found('No such resource class %s.' % name)
    if item['status'] == 400:
        raise http.bad_request('Error in delete resource class: Cannot '
                               'delete standard resource class %s.' % name)
    if item.get('code') == codes.RESOURCE_CLASS_IN_USE.code:
        # Placement only looks for inventory: allocations need one.
        raise http.conflict('Error in delete resource class: Cannot delete '
                            'resource class %s. Class is in use in '
                            'inventory.' % name)
    faults.checked(item, 'Error in delete resource class: ')
    return http.Response(204)
