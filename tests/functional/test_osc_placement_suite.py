"""osc-placement 4.9.1's own functional tests (160) against allocworker-api.

The suite comes as osc-placement's sdist from PyPI (cached in
.venv-osc/sdist) and runs as its tox.ini runs it: ``stestr
--test-path=./osc_placement/tests/functional run``, here two workers.
Its base class gets Placement from ``placement.tests.functional.fixtures``
(an in-process Placement with a fresh in-memory database per test,
reached through wsgi-intercept). A stand-in for those two modules, written
at run time, points each worker instead at an allocworker-api of its own
(started by tools/placement-test-server.sh, noauth2, admin token) and
empties it over HTTP before each test: every provider with its
allocations, every custom trait and resource class.

The suite runs twice: as Placement's admin, unbound; and bound, with the
user it authenticates as (noauth2's ``admin``) bound to partition
``osc`` by ``[partitions] bindings``, as a deployment's service user is
when several share one allocworker (doc/deployment.md). Bound, each
server also holds a provider of another partition, with inventory every
test could use and an allocation, which the suite must never see; the
stand-in records the partition of every provider the CLI creates, and
every one must lie in ``osc``.

Without PyPI (no network) the test skips and says so.
"""

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import uuid

import pytest

from tests.functional import jsonhttp
from tests.functional import services
from tests.functional import test_osc_placement as osc

RELEASE = 'osc-placement==4.9.1'
SDIST_DIR = os.path.join(osc.VENV, 'sdist')
# The suite's test-requirements that its functional tests use (hacking
# and coverage are for its style and coverage jobs; wsgi-intercept only
# served the in-process Placement replaced here).
SUITE_PACKAGES = ['stestr==4.2.1', 'oslotest==6.1.1', 'fixtures==4.3.2',
                  'testtools==2.9.1', 'python-subunit==1.4.6']
WORKERS = 2
EXPECTED = 160
# Bound: the suite's user, the partition it is bound to, and the unbound
# operator (noauth2: any user, roles from X-Roles) who reads partitions
# and keeps the other partition's provider.
BOUND_USER = 'admin'
PARTITION = 'osc'
OPERATOR = {'x-auth-token': 'operator', 'x-roles': 'admin',
            'accept': 'application/json',
            'content-type': 'application/json',
            'openstack-api-version': 'placement 1.39'}
# Enough of every standard class the suite asks for that any request of
# it would find room here (test_list_empty asks for 999999999 MB).
ELSEWHERE = {'MEMORY_MB': {'total': 2000000000}, 'VCPU': {'total': 1024},
             'DISK_GB': {'total': 1000000}}

# placement/tests/functional/fixtures/capture.py, as the suite uses it:
# logs captured, not printed, so the CLI's stderr holds only its own.
CAPTURE = '''
import logging

import fixtures


class Logging(fixtures.Fixture):
    def _setUp(self):
        self.logger = self.useFixture(fixtures.FakeLogger(
            level=logging.INFO, format='%(levelname)s %(name)s %(message)s'))
'''

# placement/tests/functional/fixtures/placement.py: an emptied live
# server per worker in place of an in-process Placement per test.
PLACEMENT = '''
import os

import fixtures
import requests

HEADERS = {'X-Auth-Token': 'admin',
           'OpenStack-API-Version': 'placement 1.39'}
_claimed = []


def _claim():
    """This worker's endpoint: the first one no other worker took."""
    if not _claimed:
        claims = os.environ['AW_OSC_CLAIMS']
        for index, url in enumerate(os.environ['AW_OSC_ENDPOINTS'].split()):
            try:
                os.close(os.open(os.path.join(claims, str(index)),
                                 os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                continue
            _claimed.append(url)
            break
        else:
            raise RuntimeError('more test workers than servers')
    return _claimed[0]


def _call(method, url, ok=(200, 204)):
    answer = requests.request(method, url, headers=HEADERS, timeout=60)
    if answer.status_code not in ok:
        raise RuntimeError('%s %s: %s %s' % (method, url, answer.status_code,
                                             answer.text))
    return answer.json() if answer.status_code == 200 else None


def _empty(base):
    providers = _call('GET', base + '/resource_providers')[
        'resource_providers']
    for provider in providers:
        consumers = _call('GET', '%s/resource_providers/%s/allocations'
                          % (base, provider['uuid']))['allocations']
        for consumer in consumers:
            _call('DELETE', base + '/allocations/' + consumer,
                  ok=(204, 404))
    while providers:
        parents = {p['parent_provider_uuid'] for p in providers}
        leaves = [p for p in providers if p['uuid'] not in parents]
        for provider in leaves:
            _call('DELETE', base + '/resource_providers/' + provider['uuid'])
        providers = [p for p in providers if p not in leaves]
    for trait in _call('GET', base + '/traits?name=startswith:CUSTOM_')[
            'traits']:
        _call('DELETE', base + '/traits/' + trait)
    for rc in _call('GET', base + '/resource_classes')['resource_classes']:
        if rc['name'].startswith('CUSTOM_'):
            _call('DELETE', base + '/resource_classes/' + rc['name'])
    left = _call('GET', base + '/resource_providers')['resource_providers']
    if left:
        raise RuntimeError('providers left after emptying: %s' % left)


def _watching(base, original, record):
    """osc-placement's SessionClient.request, noting in ``record`` the
    partition of each provider it creates (read by an unbound operator
    through the shim's RPC mirror) before the test's cleanups delete
    it."""
    operator = {'X-Auth-Token': 'operator', 'X-Roles': 'admin'}

    def request(self, method, url, **kwargs):
        response = original(self, method, url, **kwargs)
        made = response.status_code in (200, 201)
        if made and (method, url) == ('POST', '/resource_providers'):
            uuid = response.headers['Location'].rstrip('/').split('/')[-1]
            found = requests.post(base + '/v1/get_providers',
                                  json={'uuids': [uuid]}, headers=operator,
                                  timeout=60).json()['items'][0]
            with open(record, 'a') as f:
                f.write('%s %s\\n' % (uuid, found.get('partition')))
        return response
    return request


class PlacementFixture(fixtures.Fixture):
    def __init__(self, token='admin'):
        super().__init__()
        self.token = token

    def _setUp(self):
        self.endpoint = _claim()
        _empty(self.endpoint)
        records = os.environ.get('AW_OSC_RECORDS')
        if records:
            from osc_placement import http
            self.useFixture(fixtures.MonkeyPatch(
                'osc_placement.http.SessionClient.request',
                _watching(self.endpoint, http.SessionClient.request,
                          os.path.join(records, str(os.getpid())))))
'''


def _sdist():
    """The suite's sdist, downloaded once; skips without PyPI."""
    os.makedirs(SDIST_DIR, exist_ok=True)
    found = [n for n in os.listdir(SDIST_DIR) if n.endswith('.tar.gz')]
    if not found:
        why = ''
        try:
            result = subprocess.run(
                [sys.executable, '-m', 'pip', 'download', '-q', '--no-deps',
                 '--no-binary', ':all:', '--disable-pip-version-check',
                 '--retries', '1', '--timeout', '30', '-d', SDIST_DIR,
                 RELEASE], capture_output=True, text=True, timeout=300)
            why = (result.stderr.strip().splitlines() or [''])[-1][:500]
        except subprocess.TimeoutExpired:
            why = 'pip download did not finish in 300 s'
        found = [n for n in os.listdir(SDIST_DIR) if n.endswith('.tar.gz')]
        if not found:
            pytest.skip('cannot download the %s sdist from PyPI (no '
                        'network?): %s' % (RELEASE, why))
    return os.path.join(SDIST_DIR, found[0])


def _read(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return f.read()


def _suite_venv():
    """.venv-osc (the openstack CLI) with the suite's test runner."""
    osc._openstack()
    stamp = os.path.join(osc.VENV, '.installed-suite')
    wanted = ' '.join(SUITE_PACKAGES)
    with osc.venv_lock():
        if _read(stamp) != wanted:
            subprocess.run([os.path.join(osc.VENV, 'bin', 'python'), '-m',
                            'pip', 'install', '-q',
                            '--disable-pip-version-check'] + SUITE_PACKAGES,
                           check=True, timeout=900)
            with open(stamp, 'w') as f:
                f.write(wanted)
    return os.path.join(osc.VENV, 'bin')


def _unpack(sdist, into):
    with tarfile.open(sdist) as archive:
        archive.extractall(into, filter='data')
    top = os.path.join(into, os.path.basename(sdist)[:-len('.tar.gz')])
    shim = os.path.join(into, 'shim')
    fixtures = os.path.join(shim, 'placement', 'tests', 'functional',
                            'fixtures')
    os.makedirs(fixtures)
    folder = fixtures
    while folder != shim:
        open(os.path.join(folder, '__init__.py'), 'a').close()
        folder = os.path.dirname(folder)
    for name, text in (('capture.py', CAPTURE), ('placement.py', PLACEMENT)):
        with open(os.path.join(fixtures, name), 'w') as f:
            f.write(text)
    return top, shim


@pytest.fixture(scope='module')
def suite_bin():
    """The sdist and the venv that runs it, before any server starts."""
    sdist = _sdist()
    return sdist, _suite_venv()


@pytest.fixture
def endpoints(partition):
    """One allocworker-api per suite worker, as a user starts it; yields
    their URLs and log files. With ``partition``, the suite's user is
    bound to it (``[partitions] bindings``, from the environment as
    oslo.config reads it: OS_PARTITIONS__BINDINGS)."""
    scratch = tempfile.mkdtemp(prefix='aw-osc-suite-')
    servers, urls, logs = [], [], []
    env = dict(os.environ)
    if partition:
        env['OS_PARTITIONS__BINDINGS'] = '%s:%s' % (BOUND_USER, partition)
    try:
        for n in range(WORKERS):
            folder = os.path.join(scratch, 'server%d' % n)
            os.mkdir(folder)
            port = services.free_port()
            servers.append(subprocess.Popen(
                [osc.SERVER, folder, str(port),
                 os.path.join(folder, 'aw.sqlite')],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, env=env))
            urls.append('http://127.0.0.1:%d' % port)
            logs.append(os.path.join(folder, 'allocworker-api.log'))
        for url in urls:
            services.wait_for_http(url)
        yield urls, logs
    finally:
        for server in servers:
            if server.poll() is None:
                os.killpg(server.pid, 15)
            server.wait(timeout=30)
        shutil.rmtree(scratch, ignore_errors=True)


def _server_errors(logs):
    """The servers' logged errors (a 500's traceback), for a failure."""
    found = []
    for log in logs:
        lines = (_read(log) or '').splitlines()
        for n, line in enumerate(lines):
            if ' ERROR ' in line:
                found += lines[n:n + 30]
    return '\n'.join(found)[-6000:]


def _environment(bin_dir, shim, urls, claims, records=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('OS_', 'PYTHON'))}
    env.update(PATH=bin_dir + os.pathsep + env.get('PATH', ''),
               PYTHONPATH=shim, PYTHONDONTWRITEBYTECODE='1',
               AW_OSC_ENDPOINTS=' '.join(urls), AW_OSC_CLAIMS=claims)
    if records:
        env['AW_OSC_RECORDS'] = records
    return env


def _operator(base, method, path, body=None, ok=(200, 201, 204)):
    status, found = jsonhttp.call(base + path, method, body, OPERATOR)
    assert status in ok, (method, path, status, found)
    return found


def _elsewhere(base):
    """A provider of another partition (the operator's, unbound: it lands
    in ``default``) with room for any of the suite's requests and one
    consumer; its uuid and what the operator reads of it."""
    provider, consumer = str(uuid.uuid4()), str(uuid.uuid4())
    _operator(base, 'POST', '/resource_providers',
              {'uuid': provider, 'name': 'compute-of-another-site'})
    _operator(base, 'PUT', '/resource_providers/%s/inventories' % provider,
              {'resource_provider_generation': 0, 'inventories': ELSEWHERE})
    _operator(base, 'PUT', '/allocations/%s' % consumer, {
        'allocations': {provider: {'resources': {'VCPU': 1}}},
        'project_id': 'fake-project', 'user_id': 'fake-user',
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    return provider, _kept(base, provider)


def _kept(base, provider):
    """What the operator sees of ``provider``: its partition, generation,
    inventory totals and usages (a 404 when it is gone)."""
    usages = _operator(base, 'GET',
                       '/resource_providers/%s/usages' % provider)['usages']
    item = _operator(base, 'POST', '/v1/get_providers',
                     {'uuids': [provider]})['items'][0]
    return (item.get('partition'), item.get('generation'),
            {rc: i['total'] for rc, i in item['inventories'].items()},
            usages)


def _created(records):
    """[(uuid, partition)] of every provider the suite created."""
    found = []
    for name in os.listdir(records):
        found += [tuple(line.split()) for line in
                  (_read(os.path.join(records, name)) or '').splitlines()]
    return found


def _totals(output):
    """{'Ran': n, 'Passed': n, 'Failed': n, ...} from stestr's summary."""
    totals = {k: int(v) for k, v in re.findall(
        r'^ - ([A-Za-z ]+): (\d+)$', output, re.M)}
    ran = re.search(r'^Ran: (\d+) tests', output, re.M)
    totals['Ran'] = int(ran.group(1)) if ran else 0
    return totals


@pytest.mark.parametrize('partition', [None, PARTITION],
                         ids=['unbound', 'bound'])
def test_osc_placement_functional_suite_passes(suite_bin, endpoints,
                                               partition, tmp_path):
    (sdist, bin_dir), (urls, logs) = suite_bin, endpoints
    top, shim = _unpack(sdist, str(tmp_path))
    claims = str(tmp_path / 'claims')
    os.mkdir(claims)
    records, elsewhere = None, {}
    if partition:
        records = str(tmp_path / 'records')
        os.mkdir(records)
        for url in urls:
            elsewhere[url] = _elsewhere(url)
            assert elsewhere[url][1][0] == 'default', elsewhere[url]
    env = _environment(bin_dir, shim, urls, claims, records)
    stestr = os.path.join(bin_dir, 'stestr')
    result = subprocess.run(
        [stestr, '--test-path=./osc_placement/tests/functional',
         '--top-dir=./', 'run', '--concurrency', str(WORKERS)],
        cwd=top, env=env, capture_output=True, text=True, timeout=1200)
    output = result.stdout + result.stderr
    totals = _totals(output)
    if totals.get('Passed') != EXPECTED or totals['Ran'] != EXPECTED:
        failing = subprocess.run([stestr, 'failing', '--list'], cwd=top,
                                 env=env, capture_output=True, text=True)
        details = subprocess.run([stestr, 'failing'], cwd=top, env=env,
                                 capture_output=True, text=True)
        pytest.fail('osc-placement suite (%s): %s of %d passed (%s)\n'
                    'failing:\n%s\n%s\n%s\nserver errors:\n%s'
                    % (partition or 'unbound', totals.get('Passed'),
                       EXPECTED, totals,
                       failing.stdout, details.stdout[-20000:],
                       output[-3000:], _server_errors(logs)))
    assert result.returncode == 0, output[-3000:]
    if partition:
        created = _created(records)
        # The suite makes 193 providers; far fewer means the stand-in's
        # watch missed some.
        assert len(created) >= 150, created
        assert [c for c in created if c[1] != partition] == []
        for url, (provider, before) in elsewhere.items():
            assert _kept(url, provider) == before
