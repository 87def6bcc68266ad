"""A WSGI application that answers every request with a small JSON body:
the ceiling of a uWSGI server with the peers' settings."""

BODY = b'{"allocations": {}}'


def application(environ, start_response):
    length = int(environ.get('CONTENT_LENGTH') or 0)
    if length:
        environ['wsgi.input'].read(length)
    start_response('200 OK', [('Content-Type', 'application/json'),
                              ('Content-Length', str(len(BODY)))])
    return [BODY]
