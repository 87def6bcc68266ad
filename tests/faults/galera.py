"""The Galera cluster of tools/galera-cluster.sh for the fault tests: its
control, a keyed load that also rewrites and deletes its consumers (so
every uuid's generations can be checked), and the checks each test ends
with."""

import collections
import os
import random
import re
import signal
import subprocess
import threading
import time
import uuid

import sqlalchemy as sa

from tests.faults import load as faults
from tests.faults.load import Load
from tests.functional.helpers import alloc_item

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
SCRIPT = os.path.join(ROOT, 'tools', 'galera-cluster.sh')
BASE = os.environ.get('AW_GALERA_CLUSTER_DIR',
                      '/tmp/allocworker-galera-cluster')
NODES = (1, 2, 3)
PROVIDER = '/usr/lib/galera/libgalera_smm.so'
WRITER_URL = 'mysql+pymysql://root@127.0.0.1:3320'
READER_URL = 'mysql+pymysql://root@127.0.0.1:3321'

# What the workers run with: kept connections recycled well below
# HAProxy's idle timeouts (300 s in the script's haproxy.cfg), and a
# failover budget longer than the slowest failover tested here.
WORKER_CONFIG = ('[database]\nconnection_recycle_time = 280\n'
                 '[worker]\nretry_unavailable_seconds = 40\n')


class Galera(object):
    """Control of the three nodes and HAProxy (never of the default
    MariaDB on 3306)."""

    def __init__(self, gcache_size=None):
        """``gcache_size``: the nodes' write-set cache (gcache.size, e.g.
        '4M'); None leaves the script's default."""
        self.started_here = False
        self.restart_after = False
        self.gcache_size = gcache_size
        self.env = dict(os.environ)
        if gcache_size:
            self.env['AW_GALERA_GCACHE_SIZE'] = gcache_size
        else:
            self.env.pop('AW_GALERA_GCACHE_SIZE', None)

    def start(self):
        status = self.script('status')
        self.started_here = 'Synced' not in status
        if not self.started_here and self.gcache_size and \
                self.gcache_in_use() != self.gcache_size:
            # gcache.size is read only when a node starts: a cluster
            # already running with another cache is restarted with this
            # one, and with its own again when done.
            self.script('stop', timeout=300)
            self.started_here = self.restart_after = True
        self.script('start', timeout=300)
        return self

    def stop(self):
        self.thaw_all()
        if self.started_here:
            self.script('stop', timeout=300)
        if self.restart_after:
            self.env.pop('AW_GALERA_GCACHE_SIZE', None)
            self.script('start', timeout=300)

    def gcache_in_use(self):
        """gcache.size as the first running node was started with."""
        for node in NODES:
            try:
                options = self.sql(node, 'SELECT @@wsrep_provider_options')
            except AssertionError:
                continue
            match = re.search(r'gcache\.size = ([^;]+)', options)
            if match:
                return match.group(1).strip()
        return None

    def status_value(self, node, name):
        """A wsrep status variable of node ``node``, as text."""
        return self.sql(node, "SELECT VARIABLE_VALUE FROM "
                              "information_schema.GLOBAL_STATUS WHERE "
                              "VARIABLE_NAME = '%s'" % name)

    def script(self, *args, timeout=120):
        result = subprocess.run([SCRIPT] + list(args), capture_output=True,
                                text=True, timeout=timeout, env=self.env)
        if result.returncode != 0:
            raise AssertionError('galera-cluster.sh %s: %s%s'
                                 % (' '.join(args), result.stdout,
                                    result.stderr))
        return result.stdout

    def writer(self):
        return int(self.script('writer').strip())

    def pid(self, node):
        return int(self.script('pid', str(node)).strip())

    def kill(self, node, sig=signal.SIGKILL):
        os.kill(self.pid(node), sig)

    def thaw_all(self):
        for node in NODES:
            try:
                self.kill(node, signal.SIGCONT)
            except (AssertionError, ValueError, OSError):
                pass

    def sql(self, node, statement):
        return self.script('ctl', str(node), statement).strip()

    def state(self, node):
        """'Synced Primary' when the node is healthy, else what it is."""
        for line in self.script('status').splitlines():
            if line.startswith('galera%d:' % node):
                return line.split(', ')[-1].strip()
        return ''

    def await_synced(self, nodes=NODES, seconds=120):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            status = self.script('status')
            if all('galera%d:' % n in status and
                   [line for line in status.splitlines()
                    if line.startswith('galera%d:' % n)][0]
                   .endswith('Synced Primary') for n in nodes):
                return
            time.sleep(0.5)
        raise AssertionError('nodes %s not Synced after %d s:\n%s'
                             % (nodes, seconds, status))

    def log_since(self, node, offset):
        """Node ``node``'s error log from byte ``offset`` on."""
        with open(os.path.join(BASE, 'node%d' % node, 'error.log'),
                  errors='replace') as f:
            f.seek(offset)
            return f.read()

    def log_size(self, node):
        try:
            return os.path.getsize(
                os.path.join(BASE, 'node%d' % node, 'error.log'))
        except OSError:
            return 0

    def checksums(self, database):
        """{node: {table: checksum}}, each node read after it applied
        everything the cluster committed before (wsrep_sync_wait)."""
        found = {}
        for node in NODES:
            engine = sa.create_engine(
                'mysql+pymysql://root@127.0.0.1:%d/%s' % (3310 + node,
                                                          database),
                poolclass=sa.pool.NullPool)
            with engine.connect() as conn:
                conn.exec_driver_sql('SET SESSION wsrep_sync_wait = 1')
                tables = [r[0] for r in conn.exec_driver_sql('SHOW TABLES')]
                rows = conn.exec_driver_sql(
                    'CHECKSUM TABLE %s' % ', '.join(tables)).fetchall()
                found[node] = {name.split('.')[-1]: value
                               for name, value in rows}
            engine.dispose()
        return found


def fresh_database(name):
    """Create database ``name`` through HAProxy; its URL."""
    engine = sa.create_engine(WRITER_URL + '/', poolclass=sa.pool.NullPool,
                              isolation_level='AUTOCOMMIT')
    with engine.connect() as conn:
        conn.exec_driver_sql('CREATE DATABASE %s' % name)
    engine.dispose()
    return '%s/%s?charset=utf8mb4' % (WRITER_URL, name)


def drop_database(name):
    engine = sa.create_engine(WRITER_URL + '/', poolclass=sa.pool.NullPool,
                              isolation_level='AUTOCOMMIT')
    with engine.connect() as conn:
        conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % name)
    engine.dispose()


class Library(object):
    """allocworker.rpcapi (what a Python caller imports) behind the
    interface Load uses; allocate resends keyed batches itself."""

    def __init__(self, client, topic, retries=2):
        from allocworker import rpcapi
        self.context = client.context
        self.retries = retries
        self.api = rpcapi.AllocWorkerAPI(transport=client.transport,
                                         topic=topic)

    def call(self, method, rpc_timeout=None, **kwargs):
        if method == 'allocate':
            kwargs['retries'] = self.retries
        return getattr(self.api, method)(self.context, timeout=rpc_timeout,
                                         **kwargs)


class KeyedRewrites(Load):
    """Load whose clients also rewrite and delete the consumers they made
    (each client owns its consumers, with the generation it was last
    answered), every item keyed. Records every generation answered per
    uuid, so a reused or reordered generation shows."""

    def __init__(self, rpc, hosts, clients=6, batch=10, rpc_timeout=8):
        super().__init__(rpc, hosts, clients, batch, rpc_timeout)
        self.history = collections.defaultdict(list)   # uuid -> [gen|None]
        # uuid -> [(status, code, generation sent, generation answered)]:
        # printed for a uuid found lost, to tell an answer never recorded
        # from a write the books dropped.
        self.answers = collections.defaultdict(list)
        self.read_statuses = collections.Counter()

    def start(self):
        super().start()
        reader = threading.Thread(target=self._reader, daemon=True)
        reader.start()
        self.threads.append(reader)
        return self

    def _reader(self):
        """Reads beside the writes, every 0.2 s: their whole-request
        statuses (a read that met the failover runs again in the
        worker, so none may be 500)."""
        while not self.stopping.is_set():
            try:
                answer = self.rpc.call('get_usages', provider_uuids=list(
                    self.hosts), rpc_timeout=self.rpc_timeout)
                with self.lock:
                    self.read_statuses[answer['status']] += 1
            except Exception as error:
                self._count('read ' + type(error).__name__)
            time.sleep(0.2)

    def _client(self, n):
        owned = {}
        rand = random.Random(n)
        while not self.stopping.is_set():
            items = []
            chosen = rand.sample(sorted(owned), min(len(owned),
                                                    self.batch // 2))
            for consumer in chosen:
                allocations = {} if rand.random() < 0.3 else {
                    rand.choice(self.hosts): {'VCPU': rand.randint(1, 3)}}
                items.append(alloc_item(consumer, allocations,
                                        owned[consumer],
                                        idempotency_key=str(uuid.uuid4())))
            while len(items) < self.batch:
                items.append(alloc_item(
                    str(uuid.uuid4()), {rand.choice(self.hosts): {'VCPU': 1}},
                    idempotency_key=str(uuid.uuid4())))
            answer = self._send(items)
            if answer is None:
                continue
            with self.lock:
                for sent, item in zip(items, answer['items']):
                    self._record(owned, item, sent)

    def _record(self, owned, item, sent):
        consumer = item['consumer_uuid']
        self.answers[consumer].append(
            (item['status'], item.get('code'),
             sent.get('consumer_generation'), item.get('consumer_generation'),
             sent['idempotency_key'][:8]))
        self.statuses[(item['status'], item.get('code'))] += 1
        if item['status'] == 200:
            generation = item['consumer_generation']
            self.history[consumer].append(generation)
            self.acknowledged[consumer] = generation
        elif item.get('code') == 'consumer.generation_conflict':
            generation = item['consumer_generation']
        else:
            return
        if generation is None:
            owned.pop(consumer, None)
        else:
            owned[consumer] = generation

    def generations_out_of_order(self):
        """uuids whose answered generations did not strictly increase
        (deletions, None, skipped): must be none."""
        return [u for u, gens in self.history.items()
                if any(b <= a for a, b in zip(
                    [g for g in gens if g is not None],
                    [g for g in gens if g is not None][1:]))]

    def lost(self):
        """Acknowledged states the books do not show: a consumer answered
        with generation G that is not at G, or one answered deleted that
        exists (must be none)."""
        missing = self._lost()
        for consumer in missing:
            print('lost %s: answers (status, code, sent, answered, key) %s'
                  % (consumer, self.answers[consumer]))
        return missing

    def _lost(self):
        missing = []
        uuids = list(self.acknowledged)
        for start in range(0, len(uuids), 500):
            chunk = uuids[start:start + 500]
            answer = self.rpc.call('get_allocations', consumer_uuids=chunk,
                                   rpc_timeout=60)
            for item in answer['items']:
                expected = self.acknowledged[item['consumer_uuid']]
                if expected is None:
                    if item['status'] != 404:
                        missing.append(item['consumer_uuid'])
                elif item['status'] != 200 or \
                        item['consumer_generation'] != expected:
                    missing.append(item['consumer_uuid'])
                if item['consumer_uuid'] in missing:
                    print('lost %s: the books answer %s at generation %s'
                          % (item['consumer_uuid'], item['status'],
                             item.get('consumer_generation')))
        return missing


def finish(load, name, worker, galera, database, allowed=((200, None),)):
    """Stop ``load``; then: every call answered, only ``allowed``
    statuses, nothing acknowledged lost, generations strictly increasing
    per uuid, the audit clean (no overcommit, counters right), and the
    same table checksums on every node."""
    load.stop()
    lost = load.report(name)
    assert lost == []
    assert load.figures['calls answered'] == load.figures['calls made']
    assert set(load.statuses) <= set(allowed), dict(load.statuses)
    assert load.generations_out_of_order() == []
    print('reads beside: statuses %s' % dict(load.read_statuses))
    assert set(load.read_statuses) == {200}
    faults.audit_clean(worker)
    galera.await_synced()
    sums = galera.checksums(database)
    assert sums[1] == sums[2] == sums[3], sums
