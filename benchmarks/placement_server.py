"""Serve OpenStack Placement (installed from PyPI) for the benchmarks:

    PLACEMENT_PYTHON benchmarks/placement_server.py PORT DB_URL DIR

Writes DIR/placement.conf (noauth2, the database, schema made on start)
and serves the WSGI application with a threaded wsgiref server, the same
server allocworker-api uses, so the two are compared on equal terms.
Runs under Placement's interpreter: imports nothing from allocworker.
"""

import os
import socketserver
import sys
from wsgiref import simple_server


class Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True
    request_queue_size = 128


class QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, fmt, *args):
        pass


def main():
    port, url, folder = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    sys.argv = sys.argv[:1]
    with open(os.path.join(folder, 'placement.conf'), 'w') as f:
        f.write('[DEFAULT]\ndebug = False\n[api]\nauth_strategy = noauth2\n'
                '[placement_database]\nconnection = %s\n'
                'sync_on_startup = True\n' % url)
    os.environ['OS_PLACEMENT_CONFIG_DIR'] = os.path.abspath(folder)
    from placement.wsgi import init_application
    simple_server.make_server(
        '127.0.0.1', port, init_application(), server_class=Server,
        handler_class=QuietHandler).serve_forever()


if __name__ == '__main__':
    main()
