"""The RPC ceiling: a bare oslo.messaging server whose ``echo`` returns
its argument (and ``kept`` what ``keep`` was last sent). Run as
``python -m benchmarks.noop_server URL TOPIC NAME``."""

import os
import signal
import subprocess
import sys
import threading
import time

from oslo_config import cfg
import oslo_messaging as messaging


class Echo(object):
    target = messaging.Target(version='1.0')

    def __init__(self):
        self._kept = None

    def echo(self, context, arg):
        return arg

    # The ceiling of a call with a large answer: ``kept`` answers what
    # ``keep`` was sent, so only the answer crosses the wire.

    def keep(self, context, arg):
        self._kept = arg

    def kept(self, context):
        return self._kept


def start(url, topic, count, client):
    """``count`` no-op servers on ``topic``, each a process of its own,
    returned once one answers ``client`` (an oslo.messaging RPC
    client)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    processes = [subprocess.Popen(
        [sys.executable, '-m', 'benchmarks.noop_server', url, topic,
         'noop%d' % i], cwd=root) for i in range(count)]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            client.prepare(topic=topic, timeout=2).call({}, 'echo', arg=1)
            return processes
        except messaging.MessagingTimeout:
            continue
    for process in processes:
        process.terminate()
    raise RuntimeError('the no-op server did not start')


def main(url, topic, name):
    cfg.CONF([], project='noop')
    transport = messaging.get_rpc_transport(cfg.CONF, url=url)
    server = messaging.get_rpc_server(
        transport, messaging.Target(topic=topic, server=name), [Echo()],
        access_policy=messaging.DefaultRPCAccessPolicy)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server.start()
    stop.wait()
    server.stop()
    server.wait()


if __name__ == '__main__':
    main(*sys.argv[1:4])
