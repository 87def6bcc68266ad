"""A Galera standby away for longer than the others' write-set cache
(gcache) covers: it cannot catch up by incremental transfer (IST) and
rejoins by a full one (SST), which the script has a standby serve, so the
writer never blocks as a donor and keeps answering.

A module of its own because gcache.size is read only when a node starts:
its cluster runs with a cache of a few MiB (AW_GALERA_GCACHE_SIZE), which
the load outruns in seconds, while test_galera.py's nodes keep the
script's default (64M, enough for their IST rejoins). The cluster, the
database, the three worker processes and the keyed load are
test_galera.py's."""

import os
import threading
import time
import uuid

import pytest

from tests.faults import galera as cluster
from tests.faults.galera import KeyedRewrites
from tests.faults.test_galera import CALL_TIMEOUT
from tests.faults.test_galera import client  # noqa: F401
from tests.faults.test_galera import database_name  # noqa: F401
from tests.faults.test_galera import end
from tests.faults.test_galera import hosts  # noqa: F401
from tests.faults.test_galera import library  # noqa: F401
from tests.faults.test_galera import pytestmark  # noqa: F401
from tests.functional.helpers import alloc_item

GCACHE_SIZE = '2M'


@pytest.fixture(scope='module')
def galera():
    nodes = cluster.Galera(gcache_size=GCACHE_SIZE).start()
    yield nodes
    nodes.stop()


def grastate_seqno(node):
    """The seqno a cleanly stopped node saved in its grastate.dat."""
    path = os.path.join(cluster.BASE, 'node%d' % node, 'data',
                        'grastate.dat')
    with open(path) as f:
        for line in f:
            if line.startswith('seqno:'):
                return int(line.split(':', 1)[1])
    raise AssertionError('no seqno in %s' % path)


class Probe(object):
    """A new keyed single allocate every 0.25 s (2 s timeout); the longest
    time without an answered write while it runs."""

    def __init__(self, rpc, host):
        self.rpc = rpc
        self.host = host
        self.stopping = threading.Event()
        self.answered = 0
        self.failed = 0
        self.worst_gap = 0.0

    def __enter__(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join(30)

    def _run(self):
        last = time.monotonic()
        while not self.stopping.is_set():
            item = alloc_item(str(uuid.uuid4()), {self.host: {'VCPU': 1}},
                              idempotency_key=str(uuid.uuid4()))
            try:
                answer = self.rpc.call('allocate', items=[item],
                                       rpc_timeout=2)
                ok = answer['items'][0]['status'] in (200, 409)
            except Exception:
                ok = False
            now = time.monotonic()
            self.worst_gap = max(self.worst_gap, now - last)
            if ok:
                self.answered += 1
                last = now
            else:
                self.failed += 1
            self.stopping.wait(0.25)
        self.worst_gap = max(self.worst_gap, time.monotonic() - last)


def test_node_away_past_the_write_set_cache_rejoins_by_full_transfer(
        galera, client, library, hosts, database_name):  # noqa: F811
    """A standby stopped while the cluster writes more than the others'
    write-set cache holds: the donor's cache no longer reaches back to
    the node's position, so it rejoins by SST, from the other standby
    (the script names it), while the writer keeps answering."""
    assert galera.gcache_in_use() == GCACHE_SIZE
    writer = galera.writer()
    away, donor = [n for n in cluster.NODES if n != writer]
    load = KeyedRewrites(library, hosts, rpc_timeout=CALL_TIMEOUT).start()
    time.sleep(3)
    galera.script('stop', str(away))
    stopped = time.monotonic()
    seqno = grastate_seqno(away)
    written = int(galera.status_value(writer, 'wsrep_replicated_bytes'))
    # Away until neither node left could serve an IST: the lowest seqno
    # in each one's cache is past the one the returning node needs next.
    while True:
        cached = {n: int(galera.status_value(n, 'wsrep_local_cached_downto'))
                  for n in (writer, donor)}
        if min(cached.values()) > seqno + 1:
            break
        assert time.monotonic() - stopped < 120, (
            'the load did not outrun the %s write-set cache in 120 s '
            '(galera%d stopped at seqno %d, caches down to %s)'
            % (GCACHE_SIZE, away, seqno, cached))
        time.sleep(0.5)
    written = int(galera.status_value(
        writer, 'wsrep_replicated_bytes')) - written
    away_for = time.monotonic() - stopped
    offsets = {n: galera.log_size(n) for n in cluster.NODES}
    with Probe(client, hosts[0]) as probe:
        began = time.monotonic()
        galera.script('start')
        rejoined = time.monotonic() - began
    logs = {n: galera.log_since(n, offsets[n]) for n in cluster.NODES}
    selected = [line for line in logs[away].splitlines()
                if 'as donor' in line]
    print('\ngalera%d (stopped at seqno %d) away %.1f s while the writer '
          'replicated %.1f MB (gcache.size %s; caches now down to %s): back '
          'by full transfer in %.1f s; %s; during it %d writes answered, '
          '%d not, longest without an answer %.1f s'
          % (away, seqno, away_for, written / 1e6, GCACHE_SIZE, cached,
             rejoined, selected[-1].split('WSREP: ')[-1].strip()
             if selected else 'no donor line', probe.answered, probe.failed,
             probe.worst_gap))
    # Galera's own words: the donor's cache could not serve the IST.
    assert 'not found from cache, falling back to SST' in logs[donor]
    assert 'rsync SST completed on joiner' in logs[away]
    assert 'IST completed on joiner' not in logs[away]
    assert selected and '(galera%d)' % donor in selected[-1]
    assert "--role 'donor'" in logs[donor]
    assert "--role 'donor'" not in logs[writer]
    # The writer answered throughout, and is still the writer.
    assert probe.answered > 0
    assert probe.worst_gap < 5, probe.worst_gap
    assert galera.writer() == writer
    time.sleep(3)
    end(load, 'away past the write-set cache', client, galera,
        database_name)
