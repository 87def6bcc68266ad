"""Keystone's public application under a threaded wsgiref server on
127.0.0.1 (tools/keystone.sh serve); run by the Keystone venv's python
with OS_KEYSTONE_CONFIG_DIR set. Not part of allocworker."""

import socketserver
import sys
from wsgiref import simple_server

from keystone.server import wsgi


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class _Quiet(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


def main():
    port = int(sys.argv[1])
    del sys.argv[1:]  # Keystone parses the command line as its own
    application = wsgi.initialize_public_application()
    server = simple_server.make_server('127.0.0.1', port, application,
                                       server_class=_Server,
                                       handler_class=_Quiet)
    server.serve_forever()


if __name__ == '__main__':
    main()
