"""Requests, responses and errors as Placement's clients expect them.

A handler takes a ``Request`` and returns a ``Response`` or raises
``HTTPError``; ``render`` turns either into WSGI. Errors use Placement's
body, ``{"errors": [{"status", "title", "detail", "request_id",
"code"}]}`` (``code`` from microversion 1.23), or a small HTML page for a
client that accepts only HTML.
"""

import datetime
import email.utils
import html
import http.client
import json
import re
import string
import urllib.parse
import uuid as uuidlib

import jsonschema
import microversion_parse
from oslo_context import context as oslo_context

from allocworker.quota import judgement as limits

MIN_VERSION = (1, 0)
MAX_VERSION = (1, 39)
VERSIONS = ['1.%d' % n for n in range(MIN_VERSION[1], MAX_VERSION[1] + 1)]
SERVICE_TYPE = 'placement'
UNDEFINED_CODE = 'placement.undefined_code'
JSON = 'application/json'
CONCURRENT_UPDATE = 'placement.concurrent_update'


class HTTPError(Exception):
    """An error answer: ``detail`` is Placement's own message, which the
    rendering puts after WebOb's paragraph for the status, as Placement's
    answers have it. ``fields`` are extra members of the error entry."""

    def __init__(self, status, detail, code=UNDEFINED_CODE, headers=(),
                 fields=None):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.code = code
        self.headers = list(headers)
        self.fields = dict(fields or {})


def bad_request(detail, code=UNDEFINED_CODE):
    return HTTPError(400, detail, code)


def not_found(detail='', code=UNDEFINED_CODE):
    """A 404; without a message where Placement gives none (a path it
    does not serve, or a microversion it is not served at)."""
    return HTTPError(404, detail, code)


def conflict(detail, code=UNDEFINED_CODE):
    return HTTPError(409, detail, code)


class Response(object):
    def __init__(self, status=200, body=None, headers=(), cacheable=False):
        self.status = status
        self.body = body
        self.headers = list(headers)
        # Answers that carry state (GETs, and writes that echo what they
        # wrote) have Last-Modified and Cache-Control from 1.15.
        self.cacheable = cacheable


class Request(object):
    def __init__(self, environ):
        self.environ = environ
        self.method = environ.get('REQUEST_METHOD', 'GET')
        self.path = environ.get('PATH_INFO', '') or '/'
        self.query = urllib.parse.parse_qs(
            environ.get('QUERY_STRING', ''), keep_blank_values=True)
        self.context = limits.placement_api(
            oslo_context.RequestContext.from_environ(environ))
        # Set by the router from requested_version(), once the request id
        # is known (a refused version is answered with it).
        self.version = MIN_VERSION

    def at_least(self, minor):
        return self.version >= (1, minor)

    def body(self):
        length = int(self.environ.get('CONTENT_LENGTH') or 0)
        return self.environ['wsgi.input'].read(length) if length else b''

    def media_type(self):
        return self.environ.get('CONTENT_TYPE', '').split(';')[0].strip()

    def json(self, schema):
        """The JSON body, checked against ``schema`` (jsonschema); a body
        of another media type is a 415, as Placement answers."""
        if self.media_type() != JSON:
            raise HTTPError(415, 'The media type %s is not supported, use %s'
                            % (self.media_type() or None, JSON))
        try:
            data = json.loads(self.body())
        except ValueError as exc:
            raise bad_request('Malformed JSON: %s' % exc)
        validate(data, schema)
        return data

    def params(self, schema):
        """Query parameters (one value each), checked against ``schema``."""
        values = {k: v[-1] for k, v in self.query.items()}
        try:
            jsonschema.validate(values, schema, format_checker=FORMATS)
        except jsonschema.ValidationError as exc:
            raise bad_request('Invalid query string parameters: %s' % exc)
        return values


# Placement takes uuids with or without dashes.
FORMATS = jsonschema.FormatChecker(())


@FORMATS.checks('uuid')
def _is_uuid(value):
    return not isinstance(value, str) or is_uuid(value)


def is_uuid(value):
    try:
        return bool(uuidlib.UUID(value))
    except ValueError:
        return False


def validate(data, schema):
    try:
        jsonschema.validate(data, schema, format_checker=FORMATS)
    except jsonschema.ValidationError as exc:
        raise bad_request('JSON does not validate: %s' % exc)


def check_framing(environ):
    """Placement's checks of the request's own headers, made before
    routing: a body needs a Content-Type, and a length must be a number.
    (The server must leave CONTENT_TYPE out when the header is absent.)"""
    length = environ.get('CONTENT_LENGTH')
    try:
        if length and int(length) > 0 and not environ.get('CONTENT_TYPE'):
            raise bad_request('content-type header required when '
                              'content-length > 0')
    except ValueError:
        raise bad_request('content-length header must be an integer')


def check_accept(environ):
    """A 406 unless the Accept header (if any) admits JSON."""
    accept = environ.get('HTTP_ACCEPT', '').strip()
    if accept and not any(_admits_json(r) for r in accept.split(',')):
        raise HTTPError(406, 'Only %s is provided' % JSON)


def _admits_json(media_range):
    name, _, params = media_range.partition(';')
    for param in params.split(';'):
        key, _, value = param.partition('=')
        if key.strip() == 'q':
            try:
                if float(value) <= 0:
                    return False
            except ValueError:
                return False
    return name.strip().lower() in (JSON, 'application/*', '*/*')


def requested_version(environ):
    """The microversion the request asks for; Placement's 400 or 406 (which
    names the versions served) when it cannot have it."""
    headers = {'openstack-api-version':
               environ.get('HTTP_OPENSTACK_API_VERSION', '')}
    if not headers['openstack-api-version']:
        return MIN_VERSION
    try:
        found = microversion_parse.extract_version(headers, SERVICE_TYPE,
                                                   VERSIONS)
    except TypeError as exc:
        raise bad_request('Invalid microversion: %s' % exc)
    except ValueError as exc:
        raise HTTPError(406, 'Invalid microversion: %s' % exc, fields={
            'max_version': '%d.%d' % MAX_VERSION,
            'min_version': '%d.%d' % MIN_VERSION})
    return (found.major, found.minor)


def version_headers(version):
    major, minor = version
    return [('OpenStack-API-Version',
             '%s %d.%d' % (SERVICE_TYPE, major, minor)),
            ('Vary', 'openstack-api-version')]


def http_date(when=None):
    when = when or datetime.datetime.now(datetime.timezone.utc)
    return email.utils.format_datetime(when, usegmt=True)


def render(environ, start_response, outcome, version, request_id):
    """WSGI output of a Response or an HTTPError."""
    headers = version_headers(version)
    if request_id:
        headers.append(('OpenStack-Request-Id', request_id))
    if isinstance(outcome, HTTPError):
        return _render_error(environ, start_response, outcome, version,
                             request_id, headers)
    headers.extend(_absolute(environ, outcome.headers))
    if outcome.cacheable and version >= (1, 15):
        headers.extend([('Cache-Control', 'no-cache'),
                        ('Last-Modified', http_date())])
    data = b''
    if outcome.body is not None:
        data = json.dumps(outcome.body).encode('utf-8')
        headers.append(('Content-Type', 'application/json'))
    if outcome.status != 204:
        headers.append(('Content-Length', str(len(data))))
    start_response(_status_line(outcome.status), headers)
    return [data]


def _absolute(environ, headers):
    """Location headers as absolute URLs, as Placement sends them."""
    base = '%s://%s%s' % (environ.get('wsgi.url_scheme', 'http'),
                          environ.get('HTTP_HOST') or '%s:%s' % (
                              environ.get('SERVER_NAME', 'localhost'),
                              environ.get('SERVER_PORT', '80')),
                          environ.get('SCRIPT_NAME', ''))
    return [(name, base + value if name == 'Location' and
             value.startswith('/') else value) for name, value in headers]


def _render_error(environ, start_response, error, version, request_id,
                  headers):
    title = http.client.responses.get(error.status, 'Error')
    headers = headers + error.headers
    accept = environ.get('HTTP_ACCEPT', '')
    if accept and 'json' not in accept and 'html' in accept:
        text = '%d %s' % (error.status, title)
        data = _HTML % {'status': text, 'body': _framed(
            error, _environ_for_paragraph(environ), _html_escape)}
        data = data.encode('utf-8')
        headers.append(('Content-Type', 'text/html; charset=UTF-8'))
    else:
        entry = {'status': error.status, 'title': title,
                 'detail': _plain(_framed(
                     error, _environ_for_paragraph(environ), str)),
                 'request_id': request_id}
        if version >= (1, 23):
            entry['code'] = error.code
        entry.update(error.fields)
        data = json.dumps({'errors': [entry]}).encode('utf-8')
        headers.append(('Content-Type', 'application/json'))
    headers.append(('Content-Length', str(len(data))))
    start_response(_status_line(error.status), headers)
    return [data]


# Placement raises WebOb's HTTP errors, whose body is the paragraph WebOb
# has for the status, a break, then Placement's message; the JSON detail
# is that body as plain text ("paragraph\n\n message  "). Clients match
# whole details: Nova's expressions for a 409 begin with the paragraph.
# The texts are WebOb 1.8's (as Placement 16.0.0 runs on).
_PARAGRAPH = '${explanation}<br /><br />\n${detail}\n\n'
_PARAGRAPHS = {
    400: 'The server could not comply with the request since it is '
         'either malformed or otherwise incorrect.',
    403: 'Access was denied to this resource.',
    404: 'The resource could not be found.',
    409: 'There was a conflict when trying to complete your request.',
    500: 'The server has either erred or is incapable of performing the '
         'requested operation.',
}
# These three name a request header in theirs, and end at the message.
_PARAGRAPH_TEMPLATES = {
    405: 'The method ${REQUEST_METHOD} is not allowed for this resource. '
         '<br /><br />\n${detail}',
    406: 'The resource could not be generated that was acceptable to your '
         'browser\n(content of type ${HTTP_ACCEPT}. <br /><br />\n${detail}',
    415: 'The request media type ${CONTENT_TYPE} is not supported by this '
         'server.\n<br /><br />\n${detail}',
}
_HTML = ('<html>\n <head>\n  <title>%(status)s</title>\n </head>\n <body>'
         '\n  <h1>%(status)s</h1>\n  %(body)s\n </body>\n</html>')
_BREAK = re.compile(r'<br.*?>', re.I | re.S)
_TAG = re.compile(r'<.*?>', re.S)


def _framed(error, environ, escape):
    """The error's body as WebOb frames it (with ``escape`` applied to
    what is put in); a status WebOb has no paragraph for is the message
    alone."""
    template = _PARAGRAPH_TEMPLATES.get(error.status)
    if template is None and error.status not in _PARAGRAPHS:
        return escape(error.detail)
    values = {name: escape(value) for name, value in environ.items()}
    values.update(explanation=escape(_PARAGRAPHS.get(error.status, '')),
                  detail=escape(error.detail))
    return string.Template(template or _PARAGRAPH).safe_substitute(values)


def _environ_for_paragraph(environ):
    """The request's values a paragraph may name. Placement's deployment
    takes a missing or */* Accept as JSON before its handlers run."""
    values = {name: value for name, value in environ.items()
              if isinstance(value, str)}
    if values.get('HTTP_ACCEPT') in (None, '', '*/*'):
        values['HTTP_ACCEPT'] = JSON
    return values


def _plain(body):
    """A framed body as the plain text of the JSON detail: its own line
    ends become spaces and its breaks line ends; markup is dropped."""
    text = body.replace('\n', ' ').replace('\r', '')
    text = _BREAK.sub('\n', text)
    text = text.replace('<!--', '').replace('-->', '')
    return _TAG.sub('', text)


def _html_escape(text):
    return html.escape(text).encode('ascii', 'xmlcharrefreplace').decode(
        'ascii')


def _status_line(status):
    return '%d %s' % (status, http.client.responses.get(status, ''))
