"""Placement's URL map: which handler answers which method on which path.

An unknown path is a 404; a known path with another method is a 405 that
names the allowed ones, as Placement answers.
"""

import re

from oslo_log import log as logging

from allocworker.api.placement import aggregates
from allocworker.api.placement import allocations
from allocworker.api.placement import candidates
from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker.api.placement import inventories
from allocworker.api.placement import providers
from allocworker.api.placement import reshaper
from allocworker.api.placement import resource_classes
from allocworker.api.placement import root
from allocworker.api.placement import traits
from allocworker.api.placement import usages
from allocworker import policy

LOG = logging.getLogger(__name__)

_SEGMENT = '(?P<%s>[^/]+)'

ROUTES = [
    ('/', {'GET': root.versions}),
    ('/resource_providers', {'GET': providers.list_providers,
                             'POST': providers.create}),
    ('/resource_providers/{uuid}', {'GET': providers.show,
                                    'PUT': providers.update,
                                    'DELETE': providers.delete}),
    ('/resource_providers/{uuid}/inventories', {
        'GET': inventories.list_all, 'POST': inventories.create,
        'PUT': inventories.replace_all, 'DELETE': inventories.delete_all}),
    ('/resource_providers/{uuid}/inventories/{resource_class}', {
        'GET': inventories.show, 'PUT': inventories.update,
        'DELETE': inventories.delete}),
    ('/resource_providers/{uuid}/usages', {'GET': usages.of_provider}),
    ('/resource_providers/{uuid}/allocations', {
        'GET': allocations.of_provider}),
    ('/resource_providers/{uuid}/traits', {
        'GET': traits.of_provider, 'PUT': traits.set_for_provider,
        'DELETE': traits.delete_for_provider}),
    ('/resource_providers/{uuid}/aggregates', {
        'GET': aggregates.of_provider, 'PUT': aggregates.set_for_provider}),
    ('/traits', {'GET': traits.list_traits}),
    ('/traits/{name}', {'GET': traits.show, 'PUT': traits.create,
                        'DELETE': traits.delete}),
    ('/allocation_candidates', {'GET': candidates.list_candidates}),
    ('/reshaper', {'POST': reshaper.reshape}),
    ('/usages', {'GET': usages.of_project}),
    ('/allocations', {'POST': allocations.post_many}),
    ('/allocations/{consumer_uuid}', {'GET': allocations.show,
                                      'PUT': allocations.put,
                                      'DELETE': allocations.delete}),
    ('/resource_classes', {'GET': resource_classes.list_classes,
                           'POST': resource_classes.create}),
    ('/resource_classes/{name}', {'GET': resource_classes.show,
                                  'PUT': resource_classes.update,
                                  'DELETE': resource_classes.delete}),
]


# The handlers that word a provider which is not there as Placement's own
# handler does, in place of faults.MISSING.
_MISSING = {
    providers.delete: faults.MISSING_FOR_DELETE,
    inventories.list_all: faults.MISSING_INVENTORIES,
    inventories.show: faults.MISSING_INVENTORIES,
    usages.of_provider: faults.MISSING_USAGES,
    allocations.of_provider: faults.MISSING_ALLOCATIONS,
    traits.of_provider: faults.MISSING_TRAITS,
}


def _compile(template):
    pattern = re.sub(r'\{(\w+)\}', lambda m: _SEGMENT % m.group(1),
                     template)
    return re.compile('^%s$' % pattern)


_COMPILED = [(_compile(template), methods) for template, methods in ROUTES]


def dispatch(request):
    """The handler's Response, or HTTPError."""
    for pattern, methods in _COMPILED:
        match = pattern.match(request.path)
        if match is None:
            continue
        handler = methods.get(request.method)
        if handler is None:
            allowed = ', '.join(sorted(methods))
            raise http.HTTPError(
                405, 'The method specified is not allowed for this '
                'resource.', headers=[('Allow', allowed)])
        if handler is not root.versions:
            if request.method == 'GET':
                http.check_accept(request.environ)
            faults.call(policy.check, request.context, 'placement_api',
                        'the Placement API')
        path = match.groupdict()
        if 'uuid' in path and not http.is_uuid(path['uuid']):
            # Placement looks a provider up by whatever string it is given,
            # so a malformed uuid is simply not found.
            raise faults.missing(path['uuid'], _MISSING.get(
                handler, faults.MISSING))
        return handler(request, **path)
    raise http.not_found()


def application(environ, start_response):
    version, request_id = http.MIN_VERSION, None
    try:
        request = http.Request(environ)
        request_id = request.context.request_id
        version = request.version = http.requested_version(environ)
        http.check_framing(environ)
        outcome = dispatch(request)
    except http.HTTPError as error:
        outcome = error
    except Exception:
        LOG.exception('%s %s failed unexpectedly',
                      environ.get('REQUEST_METHOD'), environ.get('PATH_INFO'))
        outcome = http.HTTPError(500, 'An unexpected error happened; the '
                                 'request id is in the server log.')
    return http.render(environ, start_response, outcome, version,
                       request_id)
