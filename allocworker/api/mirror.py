"""``POST /v1/{method}``: every RPC call over HTTP. The JSON body is the
call's keyword arguments; the answer is the call's envelope, its
``status`` also the HTTP status."""

import http.client
import json

from oslo_context import context as oslo_context

from allocworker import calls
from allocworker import codes

PREFIX = '/v1/'


def _respond(start_response, status, body, headers=()):
    data = json.dumps(body).encode('utf-8')
    start_response('%d %s' % (status, http.client.responses.get(status, '')),
                   [('Content-Type', 'application/json'),
                    ('Content-Length', str(len(data)))] + list(headers))
    return [data]


def _refuse(start_response, context, http_status, detail, headers=()):
    """An HTTP-level refusal, in the envelope's shape."""
    body = codes.request_error(context.request_id, codes.Fault(
        codes.INVALID_REQUEST, detail))
    body['status'] = http_status
    return _respond(start_response, http_status, body, headers)


def application(environ, start_response):
    context = oslo_context.RequestContext.from_environ(environ)
    path = environ.get('PATH_INFO', '')
    name = path[len(PREFIX):] if path.startswith(PREFIX) else None
    if name not in calls.CALLS:
        return _refuse(start_response, context, 404,
                       'no such call: %s' % path)
    if environ.get('REQUEST_METHOD') != 'POST':
        return _refuse(start_response, context, 405, 'calls are POSTed',
                       [('Allow', 'POST')])
    try:
        length = int(environ.get('CONTENT_LENGTH') or 0)
        raw = environ['wsgi.input'].read(length) if length else b'{}'
        kwargs = json.loads(raw or b'{}')
        if not isinstance(kwargs, dict):
            raise ValueError('the body must be a JSON object')
    except ValueError as exc:
        return _respond(start_response, 400, codes.request_error(
            context.request_id, codes.Fault(
                codes.INVALID_REQUEST, 'bad JSON body: %s' % exc)))
    answer = calls.answer(context, name, kwargs)
    return _respond(start_response, answer['status'], answer,
                    [('OpenStack-Request-Id', context.request_id)])
