"""The RPC ceiling: a bare oslo.messaging server whose ``echo`` returns
its argument (and ``kept`` what ``keep`` was last sent). Run as
``python -m benchmarks.noop_server URL TOPIC NAME``."""

import signal
import sys
import threading

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
