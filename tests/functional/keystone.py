"""A real Keystone for the project-limit and service-user tests
(tools/keystone.sh): served from a copy of a bootstrapped template, with a
small client for what the tests do through Keystone's API (projects,
roles, users and their tokens, registered and project limits), the
[oslo_limit] section that points a worker at it, and the
[keystone_authtoken] section that has allocworker-api check its tokens."""

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid

from tests.functional import services

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, 'tools', 'keystone.sh')


# Workers judge by limits read every 2 s; the last ones hold
# ``stale_seconds`` more when Keystone is down (a test module may set
# STALE_SECONDS; the default outlasts a slow read on a busy machine). A
# storm sends 64 calls at once to 3 worker processes.
WORKER_CONFIG = """
[quota]
driver = unified_limits
refresh_seconds = 2
stale_seconds = {stale_seconds}
[database]
max_overflow = 10
"""


def template():
    """Install Keystone and bootstrap the template unless done; its dir."""
    done = subprocess.run([SCRIPT, 'template'], check=True,
                          capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1]


class Keystone(object):

    def __init__(self, directory):
        self.directory = directory
        self.port = services.free_port()
        self.url = 'http://127.0.0.1:%d/v3' % self.port
        self.process = None
        self._token = None
        self._limit_ids = {}
        template()

    def start(self, seconds=120):
        self.process = subprocess.Popen(
            [SCRIPT, 'serve', self.directory, str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.url, timeout=1)
                break
            except OSError:
                if self.process.poll() is not None:
                    raise AssertionError('keystone exited: see %s'
                                         % self.directory)
                time.sleep(0.3)
        else:
            raise AssertionError('keystone did not start')
        with open(os.path.join(self.directory, 'ids.env')) as ids:
            self.ids = dict(line.strip().split('=', 1) for line in ids
                            if '=' in line)
        return self

    def stop(self):
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(30)
        self.process = None
        self._token = None

    def oslo_limit_config(self):
        return ('[oslo_limit]\nauth_url = %s\nauth_type = password\n'
                'username = admin\npassword = %s\nuser_domain_id = default\n'
                'system_scope = all\nendpoint_id = %s\n'
                'region_name = RegionOne\ntimeout = 5\n'
                'endpoint_override = %s\n'
                % (self.url, self.ids['ADMIN_PASSWORD'],
                   self.ids['ENDPOINT_ID'], self.url))

    def authtoken_config(self):
        """[keystone_authtoken] for allocworker-api (``[api]
        auth_strategy = keystone``): keystonemiddleware validates each
        caller's token as the admin user (system scope), reaching
        Keystone at ``auth_url`` and, for validation, at the catalog's
        public identity endpoint (``identity_endpoint_here`` makes it
        this Keystone's); no memcached (tokens cached in the process)."""
        return ('[keystone_authtoken]\nwww_authenticate_uri = %s\n'
                'auth_url = %s\nauth_type = password\nusername = admin\n'
                'password = %s\nuser_domain_id = default\n'
                'system_scope = all\ninterface = public\n'
                'region_name = RegionOne\nhttp_connect_timeout = 10\n'
                % (self.url, self.url, self.ids['ADMIN_PASSWORD']))

    # -- Keystone's API ----------------------------------------------------

    def _request(self, method, path, body=None, token=True):
        headers = {'content-type': 'application/json'}
        if token:
            headers['x-auth-token'] = self.token()
        request = urllib.request.Request(
            self.url + path, method=method, headers=headers,
            data=json.dumps(body).encode() if body is not None else None)
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
            return response, json.loads(text) if text else None

    def token(self):
        if self._token is None:
            user = {'name': 'admin', 'domain': {'id': 'default'},
                    'password': self.ids['ADMIN_PASSWORD']}
            response, _body = self._request('POST', '/auth/tokens', {
                'auth': {'identity': {'methods': ['password'],
                                      'password': {'user': user}},
                         'scope': {'system': {'all': True}}}}, token=False)
            self._token = response.headers['x-subject-token']
        return self._token

    def project(self, name):
        """A new project's id (limits may only name existing projects)."""
        _r, body = self._request('POST', '/projects', {'project': {
            'name': name, 'domain_id': 'default'}})
        return body['project']['id']

    def identity_endpoint_here(self):
        """Point the catalog's identity endpoints (bootstrapped for port
        5000) at this Keystone: keystonemiddleware finds where to validate
        tokens in the catalog."""
        _r, body = self._request('GET', '/services?type=identity')
        for service in body['services']:
            _r, found = self._request('GET', '/endpoints?service_id=%s'
                                      % service['id'])
            for endpoint in found['endpoints']:
                if endpoint['url'] != self.url:
                    self._request('PATCH', '/endpoints/%s' % endpoint['id'],
                                  {'endpoint': {'url': self.url}})

    def named(self, collection, name):
        """The id of the ``collection`` item (projects, roles, users)
        called ``name``, or None."""
        _r, body = self._request('GET', '/%s?name=%s' % (collection, name))
        return body[collection][0]['id'] if body[collection] else None

    def service_project(self, name='service'):
        """The id of project ``name``, created when missing."""
        return self.named('projects', name) or self.project(name)

    def role(self, name):
        """The id of role ``name``, created when missing (Keystone's
        bootstrap makes admin, manager, member, reader and service)."""
        found = self.named('roles', name)
        if found is None:
            _r, body = self._request('POST', '/roles',
                                     {'role': {'name': name}})
            found = body['role']['id']
        return found

    def user(self, name, password, project_id, roles):
        """A new user's id, given ``roles`` (names) on ``project_id``."""
        _r, body = self._request('POST', '/users', {'user': {
            'name': name, 'password': password, 'domain_id': 'default',
            'default_project_id': project_id}})
        user_id = body['user']['id']
        for role in roles:
            self._request('PUT', '/projects/%s/users/%s/roles/%s'
                          % (project_id, user_id, self.role(role)))
        return user_id

    def service_users(self, roles, project='service'):
        """{name: (Keystone user id, token)} of new users, ``roles``
        {name: [role names]} on ``project``, each token scoped to it by
        password (as devstack makes Nova's user and Nova gets its token);
        the catalog's identity endpoint points here first."""
        self.identity_endpoint_here()
        project_id = self.service_project(project)
        found = {}
        for name, names in roles.items():
            password = 'pw-%s' % uuid.uuid4().hex
            found[name] = (self.user(name, password, project_id, names),
                           self.user_token(name, password, project))
        return found

    def api_config(self, bindings):
        """allocworker-api's configuration checking tokens here, with
        ``bindings`` ({Keystone user id: partition})."""
        return '%s[partitions]\nbindings = %s\n' % (
            self.authtoken_config(), ','.join(
                '%s:%s' % pair for pair in sorted(bindings.items())))

    def user_token(self, name, password, project):
        """A token of user ``name`` by password, scoped to project
        ``project`` (by name, in the default domain)."""
        user = {'name': name, 'domain': {'id': 'default'},
                'password': password}
        response, _body = self._request('POST', '/auth/tokens', {
            'auth': {'identity': {'methods': ['password'],
                                  'password': {'user': user}},
                     'scope': {'project': {'name': project, 'domain': {
                         'id': 'default'}}}}}, token=False)
        return response.headers['x-subject-token']

    def registered_limit(self, resource, value):
        """Create or change the default limit of ``resource``."""
        self._set(('registered', resource), 'registered_limits',
                  'registered_limit', {'default_limit': value},
                  {'service_id': self.ids['SERVICE_ID'],
                   'region_id': self.ids['REGION_ID'],
                   'resource_name': resource})

    def project_limit(self, project_id, resource, value):
        """Create or change ``project_id``'s limit of ``resource``."""
        self._set((project_id, resource), 'limits', 'limit',
                  {'resource_limit': value},
                  {'service_id': self.ids['SERVICE_ID'],
                   'region_id': self.ids['REGION_ID'],
                   'project_id': project_id, 'resource_name': resource})

    def _set(self, key, collection, single, value, identity):
        found = self._limit_ids.get(key)
        if found:
            self._request('PATCH', '/%s/%s' % (collection, found),
                          {single: value})
            return
        try:
            _r, body = self._request('POST', '/' + collection, {
                collection: [dict(identity, **value)]})
            self._limit_ids[key] = body[collection][0]['id']
        except urllib.error.HTTPError as exc:
            if exc.code != 409:
                raise
            # Made before (by an earlier client of this Keystone).
            query = '&'.join('%s=%s' % kv
                             for kv in sorted(identity.items()))
            _r, body = self._request('GET', '/%s?%s' % (collection, query))
            self._limit_ids[key] = body[collection][0]['id']
            self._set(key, collection, single, value, identity)
