"""The one JSON-over-HTTP client of the tests and benchmarks (urllib, so
a test run needs no HTTP library): an error status is an answer to look
at, not an exception."""

import json
import urllib.error
import urllib.request


def request(url, method='GET', body=None, headers=None, timeout=60):
    """(status, raw body) of one request; ``body`` is sent as JSON, or as
    it is when already bytes."""
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
    sent = urllib.request.Request(url, method=method, data=body,
                                  headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(sent, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def call(url, method='GET', body=None, headers=None, timeout=60):
    """(status, decoded JSON answer, or None when it has no body)."""
    status, raw = request(url, method, body, headers, timeout)
    return status, json.loads(raw) if raw else None


def placement_headers(version):
    """An admin's (noauth2) request at Placement microversion
    ``version``."""
    return {'x-auth-token': 'admin', 'accept': 'application/json',
            'content-type': 'application/json',
            'openstack-api-version': 'placement %s' % version}
