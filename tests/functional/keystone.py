"""A real Keystone for the project-limit tests (tools/keystone.sh): served
from a copy of a bootstrapped template, with a small client for what the
tests do through Keystone's API (projects, registered and project
limits), and the [oslo_limit] section that points a worker at it."""

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request

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
