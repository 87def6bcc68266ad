"""``/resource_providers``: create, list, show, delete."""

import uuid as uuidlib

from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker.api.placement import schemas
from allocworker import providers


def url(provider_uuid, *rest):
    return '/'.join(('/resource_providers', provider_uuid) + rest)


def representation(request, item):
    provider_uuid = item['uuid']
    rels = ['self', 'inventories', 'usages']
    if request.at_least(1):
        rels.append('aggregates')
    if request.at_least(6):
        rels.append('traits')
    if request.at_least(11):
        rels.append('allocations')
    body = {'uuid': provider_uuid, 'name': item['name'],
            'generation': item['generation'],
            'links': [{'rel': rel, 'href': url(provider_uuid) if rel == 'self'
                       else url(provider_uuid, rel)} for rel in rels]}
    if request.at_least(14):
        body['parent_provider_uuid'] = item['parent_uuid']
        body['root_provider_uuid'] = item['root_uuid']
    return body


def fetch(request, provider_uuid):
    """The provider's item (with inventories), or 404."""
    item, = faults.call(providers.get_providers, request.context,
                        [provider_uuid])
    if item['status'] == 404:
        raise http.not_found('No resource provider with uuid %s found'
                             % provider_uuid)
    return faults.checked(item)


def create(request):
    data = request.json(schemas.create_provider(request))
    provider_uuid = data.get('uuid') or str(uuidlib.uuid4())
    item, = providers.create_provider(
        request.context, provider_uuid, data['name'],
        data.get('parent_provider_uuid'))
    if item.get('code') == 'provider.exists':
        taken, = providers.get_providers(request.context, [provider_uuid])
        what = ('uuid: %s' % provider_uuid if taken['status'] == 200
                else 'name: %s' % data['name'])
        raise http.conflict('Conflicting resource provider %s already '
                            'exists.' % what)
    faults.checked(item)
    location = [('Location', url(item['uuid']))]
    if request.at_least(20):
        return http.Response(200, representation(request, item), location)
    return http.Response(201, None, location)


def list_providers(request):
    params = request.params(schemas.list_providers(request))
    found = [faults.checked(i) for i in
             faults.call(providers.get_providers, request.context)]
    if 'uuid' in params:
        found = [i for i in found if i['uuid'] == params['uuid']]
    if 'name' in params:
        found = [i for i in found if i['name'] == params['name']]
    if 'in_tree' in params:
        roots = {i['root_uuid'] for i in found
                 if i['uuid'] == params['in_tree']}
        found = [i for i in found if i['root_uuid'] in roots]
    return http.Response(body={'resource_providers': [
        representation(request, i) for i in found]}, cacheable=True)


def show(request, uuid):
    return http.Response(body=representation(request, fetch(request, uuid)),
                         cacheable=True)


def update(request, uuid):
    raise http.HTTPError(
        405, 'allocworker does not rename or re-parent providers yet.',
        headers=[('Allow', 'DELETE, GET')])


def delete(request, uuid):
    item, = providers.delete_provider(request.context, uuid)
    if item['status'] == 404:
        raise http.not_found('No resource provider with uuid %s found for '
                             'delete' % uuid)
    faults.checked(item)
    return http.Response(204)
