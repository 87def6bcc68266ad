"""``allocworker-manage placement compare``: two Placement-API endpoints
read the same way and every difference listed, so an operator proves a
cutover (and the tests do).

What is read: every provider (name, generation, parent, root), its
inventories, traits, aggregates and usages; every consumer found in a
provider's allocations, with its allocations, generation, project, user
and type; and ``GET /usages?project_id=`` for every project seen. An
endpoint is a ``fetch(path, microversion)`` callable answering (status,
JSON body); ``http_fetch`` makes one for a URL.
"""

from concurrent import futures
import json
import urllib.error
import urllib.parse
import urllib.request

VERSION = '1.38'
THREADS = 8


class Unreadable(Exception):
    """An endpoint could not be read."""


def http_fetch(base, token):
    base = base.rstrip('/')

    def fetch(path, version=VERSION):
        request = urllib.request.Request(base + path, headers={
            'x-auth-token': token, 'accept': 'application/json',
            'openstack-api-version': 'placement %s' % version})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read() or 'null')
        except urllib.error.HTTPError as error:
            return error.code, None
        except (OSError, ValueError) as exc:
            raise Unreadable('cannot read %s%s: %s' % (base, path, exc))
    fetch.name = base
    return fetch


def _get(fetch, path, version=VERSION):
    status, body = fetch(path, version)
    if status != 200:
        raise Unreadable('%s%s answered %s' % (
            getattr(fetch, 'name', ''), path, status))
    return body


def usages_version(fetch):
    """1.38, or 1.37 where the endpoint cannot answer project usages by
    consumer type (Placement 16 on PostgreSQL answers 500 there: its
    query groups by the wrong column)."""
    status, _body = fetch('/usages?project_id=probe', VERSION)
    return VERSION if status == 200 else '1.37'


def books(fetch, project_usages=VERSION):
    """Everything compared, as {(what, where): value}."""
    found = {}
    providers = _get(fetch, '/resource_providers')['resource_providers']
    for p in providers:
        found[('provider', p['uuid'])] = {
            k: p.get(k) for k in ('name', 'generation',
                                  'parent_provider_uuid',
                                  'root_provider_uuid')}
    consumers = set()
    with futures.ThreadPoolExecutor(THREADS) as pool:
        for uuid, facts, held in pool.map(
                lambda p: _provider(fetch, p['uuid']), providers):
            found.update(((what, uuid), value)
                         for what, value in facts.items())
            consumers.update(held)
        projects = set()
        for uuid, body in pool.map(lambda c: (c, _get(
                fetch, '/allocations/%s' % c)), sorted(consumers)):
            found[('consumer', uuid)] = body
            projects.add(body.get('project_id'))
        for project, body in pool.map(lambda p: (p, _get(
                fetch, '/usages?' + urllib.parse.urlencode(
                    {'project_id': p}), project_usages)),
                sorted(projects - {None})):
            found[('project usages', project)] = body['usages']
    return found


def _provider(fetch, uuid):
    base = '/resource_providers/%s' % uuid
    inventories = _get(fetch, base + '/inventories')['inventories']
    facts = {
        'inventories': inventories,
        'traits': sorted(_get(fetch, base + '/traits')['traits']),
        'aggregates': sorted(_get(fetch, base + '/aggregates')[
            'aggregates']),
        'usages': _get(fetch, base + '/usages')['usages']}
    held = _get(fetch, base + '/allocations')['allocations']
    return uuid, facts, set(held)


def compare(first, second):
    """[{what, where, first, second}] for every difference between the
    books of two fetch callables; [] when they agree."""
    version = min(usages_version(first), usages_version(second))
    mine, theirs = books(first, version), books(second, version)
    differences = []
    for key in sorted(set(mine) | set(theirs)):
        a, b = mine.get(key), theirs.get(key)
        if a != b:
            differences.extend(_spelled(key, a, b))
    return differences


def _spelled(key, a, b):
    """One row per differing field where both sides have the object."""
    what, where = key
    if isinstance(a, dict) and isinstance(b, dict):
        return [{'what': '%s %s' % (what, field), 'where': where,
                 'first': a.get(field), 'second': b.get(field)}
                for field in sorted(set(a) | set(b))
                if a.get(field) != b.get(field)]
    return [{'what': what, 'where': where, 'first': a, 'second': b}]
