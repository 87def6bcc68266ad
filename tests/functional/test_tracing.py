"""Traces and the global request id, against the real broker and
database: a caller traced with osprofiler calls through allocworker's
client library; the worker's spans (the call, its transactions, their
SQL) reach an OpenTelemetry receiver (OTLP over HTTP) in the caller's
trace, and the caller's global request id is in the worker's log lines,
audit record and notifications."""

from http import server as http_server
import queue
import threading
import time
import uuid

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_context import context as oslo_context
import pytest

from tests.functional import services

BACKENDS = ['postgresql']
KEY = 'trace-test-key'


class Receiver(object):
    """An OTLP/HTTP trace receiver: every span exported to it, as
    (service name, trace id, span id, parent span id, name)."""

    def __init__(self):
        from opentelemetry.proto.collector.trace.v1 import \
            trace_service_pb2
        spans = self.spans = []

        class Handler(http_server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers['Content-Length']))
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(body)
                for resource in request.resource_spans:
                    service = {a.key: a.value.string_value for a in
                               resource.resource.attributes}['service.name']
                    for scope in resource.scope_spans:
                        spans.extend(
                            (service, s.trace_id.hex(), s.span_id.hex(),
                             s.parent_span_id.hex(), s.name)
                            for s in scope.spans)
                self.send_response(200)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http_server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()

    def wait_for(self, test, seconds=30):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if test(list(self.spans)):
                return list(self.spans)
            time.sleep(0.2)
        raise AssertionError('spans never matched: %s' % self.spans)


class Notices(object):
    def __init__(self):
        self.seen = queue.Queue()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.seen.put((event_type, ctxt))


@pytest.fixture(scope='module')
def traced(database, scratch, topic):
    """(receiver, notices, worker log path, client module state) with a
    traced worker of one process and a notification listener."""
    receiver = Receiver()
    notices = Notices()
    transport = messaging.get_notification_transport(
        cfg.CONF, url=services.RABBIT_URL)
    listener = messaging.get_notification_listener(
        transport, [messaging.Target(topic='%s-notes' % topic)], [notices])
    listener.start()
    profiler = ('[profiler]\nenabled = true\nhmac_keys = %s\n'
                'connection_string = otlp://127.0.0.1:%d\n'
                'trace_sqlalchemy = true\n' % (KEY, receiver.port))
    config = services.write_config(
        '%s/worker.conf' % scratch, database, topic, workers=1,
        extra=profiler + '[oslo_messaging_notifications]\n'
        'driver = messagingv2\ntopics = %s-notes\n' % topic)
    bare = services.BareClient(topic)
    worker = services.Worker(config).start(bare)
    try:
        yield receiver, notices, '%s/worker.log' % scratch
    finally:
        listener.stop()
        listener.wait()
        assert worker.stop() == 0


@pytest.fixture
def client(traced, topic):
    """allocworker's client library in this process, tracing into the
    same receiver."""
    from allocworker.conf import CONF
    from allocworker.metrics import tracing
    from allocworker import rpc
    from allocworker import rpcapi
    receiver = traced[0]
    overrides = [('transport_url', services.RABBIT_URL, None),
                 ('enabled', True, 'profiler'),
                 ('hmac_keys', KEY, 'profiler'),
                 ('connection_string',
                  'otlp://127.0.0.1:%d' % receiver.port, 'profiler')]
    for name, value, group in overrides:
        CONF.set_override(name, value, group)
    tracing.setup('client', 'test')
    yield rpcapi.AllocWorkerAPI(topic=topic, timeout=30)
    for name, _value, group in overrides:
        CONF.clear_override(name, group)
    tracing.setup('client', 'test')
    rpc.cleanup()


def test_a_call_is_one_trace_from_the_caller_to_the_sql(traced, client):
    from opentelemetry import trace
    from osprofiler import profiler
    receiver, notices, log_path = traced
    global_id = 'req-%s' % uuid.uuid4()
    context = oslo_context.RequestContext(
        global_request_id=global_id, project_id='p', user_id='u',
        roles=['admin'], overwrite=False)
    host = str(uuid.uuid4())
    assert client.create_provider(context, host, 'h')['status'] == 200
    client.set_inventories(context, host, 0, {'VCPU': {'total': 4}})
    profiler.init(KEY)
    try:
        answer = client.allocate(context, [{
            'consumer_uuid': str(uuid.uuid4()), 'consumer_generation': None,
            'project_id': 'p', 'user_id': 'u',
            'allocations': {host: {'VCPU': 1}}}])
    finally:
        profiler.clean()
    assert answer['status'] == 200, answer
    trace.get_tracer_provider().force_flush()

    def tree(spans):
        """{name: [(trace, span, parent)]} of the allocate's trace."""
        rpcs = [s for s in spans if s[0] == 'allocworker-client']
        if len(rpcs) != 1:
            return None
        found = {}
        for s in spans:
            if s[1] == rpcs[0][1]:
                found.setdefault((s[0], s[4]), []).append(s[2:4])
        return found

    spans = receiver.wait_for(lambda spans: (tree(spans) or {}).get(
        ('allocworker-worker', 'transaction')))
    found = tree(spans)
    [(rpc_span, _root)] = found[('allocworker-client', 'rpc')]
    [(call_span, call_parent)] = found[('allocworker-worker', 'call')]
    assert call_parent == rpc_span
    transactions = found[('allocworker-worker', 'transaction')]
    assert {parent for _span, parent in transactions} == {call_span}
    statements = [parent for (service, name), pairs in found.items()
                  if name.startswith('SQL_') for _span, parent in pairs]
    assert statements and set(statements) <= {
        span for span, _parent in transactions}
    # Only the traced call was traced.
    assert len({s[1] for s in spans if s[0] == 'allocworker-worker'}) == 1

    changed = []
    deadline = time.monotonic() + 20
    while not changed and time.monotonic() < deadline:
        try:
            kind, ctxt = notices.seen.get(timeout=0.5)
        except queue.Empty:
            continue
        if kind == 'allocworker.allocation.changed':
            changed.append(ctxt)
    assert changed and changed[0].get('global_request_id') == global_id, \
        changed
    with open(log_path) as log:
        lines = [line for line in log if global_id in line]
    audit = [line for line in lines if 'audit request_id=' in line]
    assert len(audit) == 3  # create_provider, set_inventories, allocate
    assert all('global_request_id=%s ' % global_id in line
               for line in audit)
    assert all(line.count(global_id) == 2 for line in audit)
