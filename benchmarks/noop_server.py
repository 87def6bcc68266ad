"""The RPC ceiling: a bare oslo.messaging server whose one method returns
its argument. Run as ``python -m benchmarks.noop_server URL TOPIC NAME``."""

import signal
import sys
import threading

from oslo_config import cfg
import oslo_messaging as messaging


class Echo(object):
    target = messaging.Target(version='1.0')

    def echo(self, context, arg):
        return arg


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
