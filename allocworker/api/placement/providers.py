"""``/resource_providers``: create, list, show, delete."""

import uuid as uuidlib

from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker.api.placement import schemas
from allocworker import codes
from allocworker.providers import search as provider_search
from allocworker.providers import tree as provider_tree
from allocworker.providers import rules as providers
from allocworker.scheduling import placement_query

DUPLICATE_NAME = 'placement.duplicate_name'
# Placement's words for a tree it will not make (its ObjectActionError).
_SAVE_REFUSED = 'Unable to save resource provider %s: Object action %s ' \
    'failed because: %s'
_CREATE_REFUSED = 'Unable to create resource provider "%s", %s: Object ' \
    'action create failed because: %s'
_NO_PARENT = 'parent provider UUID does not exist.'
_LOOP = 'creating loop in the provider tree is not allowed.'


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


def fetch(request, provider_uuid, sentence=faults.MISSING):
    """The provider's item (with inventories), or 404 in ``sentence``."""
    item, = faults.call(providers.get_providers, request.context,
                        [provider_uuid])
    if item['status'] in (400, 404):
        raise faults.missing(provider_uuid, sentence)
    return faults.checked(item)


def create(request):
    data = request.json(schemas.create_provider(request))
    provider_uuid = str(uuidlib.UUID(data['uuid'])) if 'uuid' in data \
        else str(uuidlib.uuid4())
    parent = data.get('parent_provider_uuid')
    if parent is not None and str(uuidlib.UUID(parent)) == provider_uuid:
        raise http.bad_request(_CREATE_REFUSED % (
            data['name'], provider_uuid, 'parent provider UUID cannot be '
            'same as UUID. Please set parent provider UUID to None if there '
            'is no parent.'))
    item, = providers.create_provider(request.context, provider_uuid,
                                      data['name'], parent)
    if item.get('code') == 'provider.exists':
        taken, = providers.get_providers(request.context, [provider_uuid])
        what = ('uuid', provider_uuid) if taken['status'] == 200 else \
            ('name', data['name'])
        raise http.conflict('Conflicting resource provider %s: %s already '
                            'exists.' % what, DUPLICATE_NAME)
    if item.get('code') == 'provider.not_found':
        raise http.bad_request(_CREATE_REFUSED % (
            data['name'], provider_uuid, _NO_PARENT))
    faults.checked(item)
    location = [('Location', url(item['uuid']))]
    if request.at_least(20):
        return http.Response(200, representation(request, item), location,
                             cacheable=True)
    return http.Response(201, None, location)


def list_providers(request):
    params = request.params(schemas.list_providers(request))
    try:
        group = placement_query.provider_filters(request.query,
                                                 request.version[1])
    except codes.Fault as fault:
        raise http.bad_request(fault.detail)
    try:
        found = faults.call(
            provider_search.find_providers, request.context,
            name=params.get('name'), uuid=params.get('uuid'), group=group)
    except http.HTTPError as error:
        if 'resource class' in error.detail:
            error.detail = ('Invalid resource class in resources parameter: '
                            '%s' % error.detail)
        elif 'trait' in error.detail:
            error.detail = ('Invalid trait(s) in "required" parameter: %s'
                            % error.detail)
        raise
    return http.Response(body={'resource_providers': [
        representation(request, i) for i in found]}, cacheable=True)


def show(request, uuid):
    return http.Response(body=representation(request, fetch(request, uuid)),
                         cacheable=True)


def update(request, uuid):
    data = request.json(schemas.update_provider(request))
    current = fetch(request, uuid)
    parent = data.get('parent_provider_uuid', provider_tree.KEEP)
    if parent not in (provider_tree.KEEP, None):
        parent = str(uuidlib.UUID(parent))
    refused = _move_refused(request, current, parent)
    if refused:
        raise http.bad_request(_SAVE_REFUSED % ((uuid,) + refused))
    item, = provider_tree.update_provider(request.context, current['uuid'],
                                          data['name'], parent)
    if item.get('code') == 'provider.not_found' and item['status'] == 400:
        raise http.bad_request(_SAVE_REFUSED % (uuid, 'create', _NO_PARENT))
    if item.get('code') == 'invalid_request' and 'loop' in item['detail']:
        raise http.bad_request(_SAVE_REFUSED % (uuid, 'update', _LOOP))
    if item.get('code') == 'provider.exists':
        raise http.conflict('Conflicting resource provider %s already '
                            'exists.' % data['name'], DUPLICATE_NAME)
    if item['status'] == 404:
        raise faults.missing(uuid)
    return http.Response(body=representation(request, faults.checked(item)),
                         cacheable=True)


def _move_refused(request, current, parent):
    """(action, reason) of Placement's refusal to give ``current`` the
    ``parent`` (a uuid, None or KEEP), checked in Placement's order; or
    None. Loops through descendants are the service layer's to find."""
    old = current['parent_uuid']
    if parent is provider_tree.KEEP:
        return None
    if parent is None:
        if old is not None and not request.at_least(37):
            return ('update', 'un-parenting a provider is not currently '
                              'allowed.')
        return None
    if parent not in (old, current['uuid']):
        found, = providers.get_providers(request.context, [parent])
        if found['status'] != 200:
            return ('create', _NO_PARENT)
    if old not in (None, parent) and not request.at_least(37):
        return ('update', 're-parenting a provider is not currently '
                          'allowed.')
    if parent == current['uuid']:
        return ('update', _LOOP)
    return None


def delete(request, uuid):
    item, = providers.delete_provider(request.context, uuid)
    if item['status'] == 404:
        raise faults.missing(uuid, faults.MISSING_FOR_DELETE)
    faults.checked(item)
    return http.Response(204)
