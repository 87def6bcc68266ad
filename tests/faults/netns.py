"""A worker host of the test's own: a network namespace joined to this
host by a veth pair, whose only way out is the host side of that pair.

Inside a namespace 127.0.0.1 is the namespace's own loopback, and the
shared PostgreSQL and the cluster's nodes listen on 127.0.0.1 only (their
listening addresses are not ours to change). So a small TCP relay in this
process listens on the host side of the veth and forwards to 127.0.0.1.
Cutting the host off takes the veth link down and drops every relayed
connection at once: the broker and the database then see the host's
connections end (as they would when TCP keepalive gives up on a dead
peer), and roll back or requeue what it had in flight.
"""

import os
import socket
import subprocess
import threading


def _ip(*args, check=True):
    return subprocess.run(['ip'] + list(args), check=check,
                          capture_output=True, text=True, timeout=30)


class Namespace(object):
    """``ip netns`` namespace NAME with veth 10.231.N.1 (host) and
    10.231.N.2 (inside); N from the pid so parallel runs do not meet."""

    def __init__(self, ports):
        n = os.getpid() % 250 + 1
        self.name = 'awns%d' % os.getpid()
        self.host_if = 'awh%d' % os.getpid()
        self.inner_if = 'awi%d' % os.getpid()
        self.host_ip = '10.231.%d.1' % n
        self.inner_ip = '10.231.%d.2' % n
        self.relay = Relay(self.host_ip, ports)

    def create(self):
        self.destroy()
        _ip('netns', 'add', self.name)
        _ip('link', 'add', self.host_if, 'type', 'veth', 'peer', 'name',
            self.inner_if)
        _ip('link', 'set', self.inner_if, 'netns', self.name)
        _ip('addr', 'add', self.host_ip + '/30', 'dev', self.host_if)
        _ip('link', 'set', self.host_if, 'up')
        for args in (('addr', 'add', self.inner_ip + '/30', 'dev',
                      self.inner_if),
                     ('link', 'set', self.inner_if, 'up'),
                     ('link', 'set', 'lo', 'up')):
            _ip('netns', 'exec', self.name, 'ip', *args)
        self.relay.start()
        return self

    def command(self, argv):
        """``argv`` run inside the namespace."""
        return ['ip', 'netns', 'exec', self.name] + list(argv)

    def cut(self):
        """Take the link down and end every connection that crossed it."""
        _ip('link', 'set', self.host_if, 'down')
        self.relay.drop()

    def mend(self):
        _ip('link', 'set', self.host_if, 'up')
        _ip('netns', 'exec', self.name, 'ip', 'link', 'set', self.inner_if,
            'up')

    def destroy(self):
        self.relay.stop()
        _ip('link', 'del', self.host_if, check=False)
        _ip('netns', 'del', self.name, check=False)


class Relay(object):
    """Forward ADDRESS:PORT to 127.0.0.1:PORT for each port."""

    def __init__(self, address, ports):
        self.address = address
        self.ports = ports
        self.listeners = []
        self.sockets = set()
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def start(self):
        self.stopping.clear()
        for port in self.ports:
            listener = socket.socket()
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((self.address, port))
            listener.listen(64)
            self.listeners.append(listener)
            threading.Thread(target=self._accept, args=(listener, port),
                             daemon=True).start()

    def _accept(self, listener, port):
        while not self.stopping.is_set():
            try:
                inner, _ = listener.accept()
            except OSError:
                return
            try:
                outer = socket.create_connection(('127.0.0.1', port), 5)
                outer.settimeout(None)
            except OSError:
                inner.close()
                continue
            with self.lock:
                self.sockets.update((inner, outer))
            for a, b in ((inner, outer), (outer, inner)):
                threading.Thread(target=self._pump, args=(a, b),
                                 daemon=True).start()

    def _pump(self, source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            self._close(source, sink)

    def _close(self, *sockets):
        with self.lock:
            for s in sockets:
                self.sockets.discard(s)
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def drop(self):
        """End every relayed connection (new ones are still accepted)."""
        with self.lock:
            sockets = list(self.sockets)
        self._close(*sockets)

    def stop(self):
        self.stopping.set()
        for listener in self.listeners:
            listener.close()
        self.listeners = []
        self.drop()
