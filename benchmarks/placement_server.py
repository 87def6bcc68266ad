"""Serve OpenStack Placement (installed from PyPI) for the benchmarks:

    PLACEMENT_PYTHON benchmarks/placement_server.py PORT DB_URL DIR

Writes DIR/placement.conf (noauth2, the database, schema made on start,
and ``TUNING``: Placement tuned as its operators tune it for a large
cloud) and serves the WSGI application with a threaded wsgiref server,
the same server allocworker-api uses, so the two are compared on equal
terms.
Runs under Placement's interpreter: imports nothing from allocworker.
"""

import os
import socketserver
import sys
from wsgiref import simple_server

# Placement 16's options for candidates at scale ([placement] in
# placement.conf; ../shared/notes.md, "Placement tuned for large clouds"):
# without a cap every viable candidate is built before ``limit`` cuts
# the answer, so a side-by-side on thousands of hosts would measure an
# untuned Placement. Each is overridden by its environment variable.
TUNING = (
    ('max_allocation_candidates', 'AW_BENCH_PLACEMENT_MAX_CANDIDATES',
     '1000'),
    ('allocation_candidates_generation_strategy',
     'AW_BENCH_PLACEMENT_STRATEGY', 'breadth-first'),
)


def tuning():
    """{option: value} of the [placement] section this run writes."""
    return {option: os.environ.get(variable) or default
            for option, variable, default in TUNING}


def placement_section():
    """The [placement] section of placement.conf, ``tuning()``'s."""
    return '[placement]\n' + ''.join(
        '%s = %s\n' % item for item in tuning().items())


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
                'sync_on_startup = True\n%s' % (url, placement_section()))
    os.environ['OS_PLACEMENT_CONFIG_DIR'] = os.path.abspath(folder)
    from placement.wsgi import init_application
    simple_server.make_server(
        '127.0.0.1', port, init_application(), server_class=Server,
        handler_class=QuietHandler).serve_forever()


if __name__ == '__main__':
    main()
