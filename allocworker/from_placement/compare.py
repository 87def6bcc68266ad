"""``allocworker-manage placement compare``: two Placement-API endpoints
read the same way and every difference listed, so an operator proves a
cutover (and the tests do).

What is read: every provider (name, generation, parent, root), its
inventories, traits, aggregates and usages; every consumer found in a
provider's allocations, with its allocations, generation, project, user
and type; and ``GET /usages?project_id=`` for every project seen. An
endpoint is a ``fetch(path, microversion)`` callable answering (status,
JSON body); ``http_fetch`` makes one for a URL.

A side may be scoped to some providers (``--partition P``: one
deployment's Placement against the books of its partition, read as an
admin who sees every partition): only those providers and the consumers
found on them are read, and each project's usages are summed from
those consumers, because a project's usages as the endpoint answers
them count its consumers in every partition. A caller whose own view is
the partition (a bound service user's token) needs no scope.
"""

from concurrent import futures
import json
import urllib.error
import urllib.parse
import urllib.request

from allocworker.db import api as db
from allocworker.db.placement import placement_scope as scope

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


def partition_providers(partition):
    """{uuid} of the providers lying in ``partition``, from the books."""
    with db.reader() as conn:
        return scope.provider_uuids(conn, partition)


def books(fetch, project_usages=VERSION, only=None):
    """Everything compared, as {(what, where): value}; ``only``: the
    {uuid} of the providers read (None: every one listed), and then
    project usages summed from the consumers read."""
    found = {}
    providers = _get(fetch, '/resource_providers')['resource_providers']
    if only is not None:
        providers = [p for p in providers if p['uuid'] in only]
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
        held = dict(pool.map(lambda c: (c, _get(
            fetch, '/allocations/%s' % c)), sorted(consumers)))
        found.update((('consumer', u), body) for u, body in held.items())
        projects = {body.get('project_id') for body in held.values()}
        if only is not None:
            found.update((('project usages', project), usages)
                         for project, usages in summed_usages(
                             held.values(), project_usages).items())
            return found
        for project, body in pool.map(lambda p: (p, _get(
                fetch, '/usages?' + urllib.parse.urlencode(
                    {'project_id': p}), project_usages)),
                sorted(projects - {None})):
            found[('project usages', project)] = body['usages']
    return found


def summed_usages(consumers, version):
    """{project_id: usages} summed from consumers' ``GET /allocations``
    bodies, in the form ``GET /usages?project_id=`` answers at
    ``version``: {class: used} before 1.38; from 1.38 per consumer type,
    each with its ``consumer_count``."""
    found = {}
    for body in consumers:
        project = body.get('project_id')
        if project is None or not body.get('allocations'):
            continue
        usages = found.setdefault(project, {})
        if _at_least(version, (1, 38)):
            usages = usages.setdefault(body.get('consumer_type'), {})
            usages['consumer_count'] = usages.get('consumer_count', 0) + 1
        for held in body['allocations'].values():
            for name, used in held['resources'].items():
                usages[name] = usages.get(name, 0) + used
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


def _at_least(version, wanted):
    return tuple(int(n) for n in version.split('.')) >= wanted


def compare(first, second, only=None):
    """[{what, where, first, second}] for every difference between the
    books of two fetch callables; [] when they agree. ``only`` scopes
    the second to those providers (``books``)."""
    version = min(usages_version(first), usages_version(second))
    mine, theirs = books(first, version), books(second, version, only)
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
