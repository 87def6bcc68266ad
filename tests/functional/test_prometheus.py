"""A real Prometheus (Debian's, started by tools/prometheus.sh on
loopback with etc/prometheus/'s scrape configuration and alerting rules)
scrapes a worker of two processes and the API while known calls are
made; the counters it then holds must match those calls exactly."""

import json
import os
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request
import uuid

from prometheus_client import parser
import pytest
import yaml

from tests.functional import services
from tests.functional.helpers import alloc_item, one, provider

BACKENDS = ['postgresql']
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, 'tools', 'prometheus.sh')
ETC = os.path.join(ROOT, 'etc', 'prometheus')
WORKER_JOB, API_JOB = 'allocworker-worker', 'allocworker-api'


def test_promtool_accepts_the_rules_and_their_tests():
    result = subprocess.run([TOOL, 'check'], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'SUCCESS: 5 rules found' in result.stdout, result.stdout


class Prometheus(object):
    """Prometheus's HTTP query API."""

    def __init__(self, port):
        self.base = 'http://127.0.0.1:%d/api/v1/' % port

    def get(self, path, **params):
        url = self.base + path + ('?' + urllib.parse.urlencode(params)
                                  if params else '')
        with urllib.request.urlopen(url, timeout=30) as response:
            answer = json.loads(response.read())
        assert answer['status'] == 'success', answer
        return answer['data']

    def value(self, query):
        """The single value of an instant ``query`` (None: no series)."""
        found = self.get('query', query=query)['result']
        assert len(found) <= 1, found
        return float(found[0]['value'][1]) if found else None

    def scraped_after(self, job, moment, seconds=60):
        """Wait until ``job``'s last scrape is later than ``moment``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            last = self.value('timestamp(up{job="%s"})' % job)
            if last is not None and last > moment:
                return
            time.sleep(0.25)
        raise AssertionError('%s not scraped after %s' % (job, moment))


def scrape_config(path, rules, worker_port, api_port):
    """etc/prometheus/prometheus.yml, with this test's targets."""
    with open(os.path.join(ETC, 'prometheus.yml')) as f:
        config = yaml.safe_load(f)
    config['global'].update(scrape_interval='1s', evaluation_interval='1s')
    config['rule_files'] = [rules]
    ports = {WORKER_JOB: worker_port, API_JOB: api_port}
    for job in config['scrape_configs']:
        job['static_configs'] = [
            {'targets': ['127.0.0.1:%d' % ports[job['job_name']]]}]
    with open(path, 'w') as f:
        yaml.safe_dump(config, f)
    return path


@pytest.fixture(scope='module')
def watched(database, scratch):
    """(RPC client of a 2-process worker, API port, Prometheus) with
    metrics on and Prometheus scraping both every second."""
    worker_metrics, api_metrics = services.free_port(), services.free_port()
    topic = 'aw-prom-%s' % uuid.uuid4().hex[:8]
    config = services.write_config(
        '%s/worker.conf' % scratch, database, topic, workers=2,
        extra='[metrics]\nport = %d\nper_provider = true\n'
              % worker_metrics)
    client = services.BareClient(topic)
    worker = services.Worker(config).start(client)
    client.metrics_port, client.worker = worker_metrics, worker
    api_port = services.free_port()
    api_config = services.write_config(
        '%s/api.conf' % scratch, database, topic,
        extra='[api]\nauth_strategy = noauth2\nport = %d\n'
              '[metrics]\nport = %d\n' % (api_port, api_metrics))
    api = subprocess.Popen(
        [os.path.join(services.BIN, 'allocworker-api'), '--config-file',
         api_config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    home = os.path.join(scratch, 'prometheus')
    port = services.free_port()
    try:
        services.wait_for_http('http://127.0.0.1:%d' % api_port)
        path = scrape_config(os.path.join(scratch, 'prometheus.yml'),
                             os.path.join(ETC, 'alerts.yml'),
                             worker_metrics, api_metrics)
        subprocess.run([TOOL, 'start', home, str(port), path], check=True,
                       timeout=600)
        yield client, api_port, Prometheus(port)
    finally:
        subprocess.run([TOOL, 'stop', home], timeout=60)
        api.terminate()
        api.wait(30)
        assert worker.stop() == 0


def post(api_port, method, **kwargs):
    request = urllib.request.Request(
        'http://127.0.0.1:%d/v1/%s' % (api_port, method), method='POST',
        data=json.dumps(kwargs).encode(), headers={'x-auth-token': 'admin'})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def drive(rpc, api_port):
    """Known calls: successes, a capacity failure, generation conflicts
    (provider and consumer), an idempotent replay, a stored and a held
    event, one delivered to a waiter, a claim, and one allocate through
    the API's mirror."""
    host, generation = provider(rpc, {
        'VCPU': {'total': 8, 'allocation_ratio': 2.0},
        'MEMORY_MB': {'total': 1024, 'reserved': 24}})
    stale = one(rpc.set_inventories(provider_uuid=host,
                                    provider_generation=generation - 1,
                                    inventories={'VCPU': {'total': 1}}))
    assert stale['code'] == 'provider.generation_conflict'
    first, second, third = (str(uuid.uuid4()) for _ in range(3))

    def allocate(consumer, vcpus, generation=None, **extra):
        return one(rpc.allocate(items=[alloc_item(
            consumer, {host: {'VCPU': vcpus}}, generation, **extra)]))

    assert allocate(first, 4)['status'] == 200
    keyed = allocate(second, 4, idempotency_key='key-%s' % second)
    assert allocate(second, 4, idempotency_key='key-%s' % second) == keyed
    assert allocate(third, 100)['code'] == 'capacity.exceeded'
    assert allocate(first, 1, generation=99)['code'] == \
        'consumer.generation_conflict'
    events = rpc.external_event(events=[
        {'name': 'network-vif-plugged', 'consumer_uuid': first},
        {'name': 'network-vif-plugged', 'consumer_uuid': third}])
    assert [i['status'] for i in events['items']] == [200, 202]
    waited = rpc.wait_for_events(consumer_uuid=first, timeout=5,
                                 names=['network-vif-plugged'])
    assert one(waited)['status'] == 200
    claimed = one(rpc.call('claim', items=[{
        'consumer_uuid': str(uuid.uuid4()), 'consumer_generation': None,
        'project_id': 'p', 'user_id': 'u',
        'request': {'groups': [{'resources': {'VCPU': 2}}]}}]))
    assert claimed['status'] == 200, claimed
    mirrored = post(api_port, 'allocate', items=[alloc_item(
        str(uuid.uuid4()), {host: {'VCPU': 1}})])
    assert mirrored['status'] == 200, mirrored
    return host


def test_prometheus_counts_exactly_what_was_called(watched):
    rpc, api_port, prometheus = watched
    host = drive(rpc, api_port)
    # Each process writes what it counted every FLUSH_SECONDS (0.5).
    done = time.time() + 1.5
    prometheus.scraped_after(WORKER_JOB, done)
    prometheus.scraped_after(API_JOB, done)

    def worker(name, **labels):
        labels['job'] = WORKER_JOB
        selector = ','.join('%s="%s"' % item
                            for item in sorted(labels.items()))
        return prometheus.value('sum(allocworker_%s{%s})'
                                % (name, selector))

    expected = {
        ('calls_total', 'allocate', '200'): 3,
        ('calls_total', 'allocate', '207'): 2,
        ('calls_total', 'set_inventories', '200'): 1,
        ('calls_total', 'set_inventories', '207'): 1,
        ('calls_total', 'external_event', '207'): 1,
        ('calls_total', 'claim', '200'): 1,
    }
    found = {key: worker(key[0], method=key[1], status=key[2])
             for key in expected}
    assert found == expected
    items = {code: worker('items_total', method='allocate', code=code)
             for code in ('none', 'capacity.exceeded',
                          'consumer.generation_conflict')}
    assert items == {'none': 3, 'capacity.exceeded': 1,
                     'consumer.generation_conflict': 1}
    assert worker('items_total', method='set_inventories', status='409',
                  code='provider.generation_conflict') == 1
    assert worker('items_total', method='external_event', status='202',
                  code='event.held') == 1
    assert {o: worker('events_total', outcome=o) for o in (
        'stored', 'held', 'delivered', 'expired')} == {
        'stored': 1, 'held': 1, 'delivered': 1, 'expired': 0}
    assert worker('claims_total', outcome='claimed') == 1
    assert worker('idempotent_replays_total') == 1
    assert worker('call_duration_seconds_count', method='allocate') == 5
    assert worker('shared_transaction_items_count') == 5
    assert worker('shared_transaction_items_sum') == 5
    assert worker('retries_total') == 0
    assert worker('parked_waiters') == 0
    # The books: one provider, so the cloud's sums are its own.
    books = {(field, cls): worker('resource_%s' % field, resource_class=cls)
             for field in ('capacity', 'used', 'reserved')
             for cls in ('VCPU', 'MEMORY_MB')}
    assert books == {
        ('capacity', 'VCPU'): 16, ('used', 'VCPU'): 11,
        ('reserved', 'VCPU'): 0, ('capacity', 'MEMORY_MB'): 1000,
        ('used', 'MEMORY_MB'): 0, ('reserved', 'MEMORY_MB'): 24}
    assert worker('provider_resource_used', provider_uuid=host,
                  partition='default', resource_class='VCPU') == 11
    assert worker('partition_resource_used', partition='default',
                  resource_class='VCPU') == 11
    # The API: its own calls and requests, and the same books.
    api = {q: prometheus.value(q % API_JOB) for q in (
        'sum(allocworker_calls_total{job="%s",method="allocate"})',
        'sum(allocworker_http_requests_total{job="%s",route="v1",'
        'method="POST",status="200"})',
        'allocworker_resource_used{job="%s",resource_class="VCPU"}',
        'sum(up{job=~"%s|allocworker-worker"})')}
    assert list(api.values()) == [1, 1, 11, 2]
    rules = prometheus.get('rules')['groups'][0]['rules']
    assert [(r['name'], r['health']) for r in rules] == [
        (name, 'ok') for name in (
            'AllocworkerWorkerDown', 'AllocworkerWorkerUnhealthy',
            'AllocworkerErrorRatio', 'AllocworkerSlowCalls',
            'AllocworkerResourceClassNearlyFull')]


def endpoint(port):
    """{(name, sorted labels): value} read from a service's endpoint."""
    with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port,
                                timeout=30) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in parser.text_string_to_metric_families(text)
            for s in family.samples}


def wait_until(test, seconds=60):
    deadline = time.monotonic() + seconds
    while not test():
        assert time.monotonic() < deadline, 'timed out'
        time.sleep(0.2)


def test_dead_worker_processes_keep_their_counts_not_their_waiters(
        watched):
    rpc, _api_port, _prometheus = watched
    port = rpc.metrics_port
    calls = ('allocworker_calls_total',
             (('method', 'allocate'), ('status', '200')))
    parked = ('allocworker_parked_waiters', ())
    before = endpoint(port)
    waiter = threading.Thread(target=lambda: rpc.call(
        'wait_for_events', rpc_timeout=40, consumer_uuid=str(uuid.uuid4()),
        names=['network-vif-plugged'], timeout=30), daemon=True)
    waiter.start()
    wait_until(lambda: endpoint(port)[parked] == 1)
    children = rpc.worker.child_pids()
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: len(set(rpc.worker.child_pids()) - set(children))
               == 2)
    after = endpoint(port)
    assert (after[calls], after[parked]) == (before[calls], 0)
