"""``/traits`` and ``/resource_providers/{uuid}/traits`` (1.6)."""

from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker.api.placement import providers as rp
from allocworker.api.placement import schemas
from allocworker import codes
from allocworker.providers import traits

SINCE = 6


def _since(request):
    if not request.at_least(SINCE):
        raise http.not_found()


def list_traits(request):
    _since(request)
    params = request.params(schemas.list_traits())
    starts_with, names = None, None
    name = params.get('name')
    if name is not None:
        if name.startswith('startswith:'):
            starts_with = name[len('startswith:'):]
        elif name.startswith('in:'):
            names = [n for n in name[len('in:'):].split(',') if n]
        else:
            raise http.bad_request(
                "Badly formatted name parameter. Expected name query "
                "string parameter in form: ?name=[in|startswith]:[name1,"
                "name2|prefix]. Got: \"%s\"" % name)
    associated = params.get('associated')
    if associated is not None:
        if associated.lower() not in ('true', 'false'):
            raise http.bad_request('The query parameter "associated" only '
                                   'accepts "true" or "false"')
        associated = associated.lower() == 'true'
    found = faults.call(traits.list_traits, request.context, starts_with,
                        names, associated)
    return http.Response(body={'traits': [i['name'] for i in found]},
                         cacheable=True)


def show(request, name):
    _since(request)
    found = faults.call(traits.list_traits, request.context, None, [name])
    if not found:
        raise http.not_found('No such trait(s): %s.' % name)
    return http.Response(204, cacheable=True)


def create(request, name):
    _since(request)
    item, = traits.create_trait(request.context, name)
    if item['status'] == 400:
        raise http.bad_request('The trait is invalid. A valid trait must '
                               'be no longer than 255 characters, start '
                               'with the prefix "CUSTOM_" and use following '
                               'characters: "A"-"Z", "0"-"9" and "_"')
    faults.checked(item)
    return http.Response(201 if item['created'] else 204, None,
                         [('Location', '/traits/%s' % name)], cacheable=True)


def delete(request, name):
    _since(request)
    item, = traits.delete_trait(request.context, name)
    if item['status'] == 404:
        raise http.not_found('No such trait(s): %s.' % name)
    faults.checked(item)
    return http.Response(204)


def _body(item):
    return {'traits': item['traits'],
            'resource_provider_generation': item['generation']}


def of_provider(request, uuid):
    _since(request)
    item, = traits.get_provider_traits(request.context, uuid)
    return http.Response(body=_body(faults.checked(
        item, sentence=faults.MISSING_TRAITS)), cacheable=True)


def set_for_provider(request, uuid):
    _since(request)
    data = request.json(schemas.put_provider_traits())
    item, = traits.set_provider_traits(
        request.context, uuid, data['resource_provider_generation'],
        data['traits'])
    if item.get('code') == codes.TRAIT_NOT_IN_BODY.code:
        # The service layer names them after its "No such trait(s): ".
        raise http.bad_request('No such trait %s'
                               % item['detail'].split(': ', 1)[-1])
    return http.Response(body=_body(faults.checked_write(item)),
                         cacheable=True)


def delete_for_provider(request, uuid):
    _since(request)
    provider = rp.fetch(request, uuid)
    item, = traits.set_provider_traits(request.context, uuid,
                                       provider['generation'], [])
    faults.checked(item)
    return http.Response(204)
