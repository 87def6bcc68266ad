"""A sustained load of concurrent clients that retry with idempotency
keys, the ledger that proves no acknowledged write was lost, and the
checks every fault test ends with."""

import collections
import threading
import time
import uuid

import kombu.exceptions
import oslo_messaging as messaging

from tests.functional import services
from tests.functional.helpers import alloc_item


class Load(object):
    """``clients`` threads, each sending batches of new consumers with
    idempotency keys; a call that times out is sent again with the same
    keys until it is answered."""

    def __init__(self, rpc, hosts, clients=8, batch=10, rpc_timeout=8):
        self.rpc = rpc
        self.hosts = hosts
        self.clients = clients
        self.batch = batch
        self.rpc_timeout = rpc_timeout
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.figures = collections.Counter()
        self.acknowledged = {}   # consumer uuid -> generation
        self.statuses = collections.Counter()
        self.threads = []
        self.worst_attempt = 0.0   # longest single rpc.call, answered or not
        self.worst_call = 0.0      # longest call until answered, retries too
        self.worst_outcome = None

    def start(self):
        for n in range(self.clients):
            t = threading.Thread(target=self._client, args=(n,), daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def stop(self, timeout=180):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout)
        assert not any(t.is_alive() for t in self.threads), 'client stuck'

    def _client(self, n):
        while not self.stopping.is_set():
            items = [alloc_item(str(uuid.uuid4()),
                                {self.hosts[(n + i) % len(self.hosts)]:
                                 {'VCPU': 1}},
                                idempotency_key=str(uuid.uuid4()))
                     for i in range(self.batch)]
            answer = self._send(items)
            if answer is None:
                continue
            with self.lock:
                for item in answer['items']:
                    self.statuses[(item['status'], item.get('code'))] += 1
                    if item['status'] == 200:
                        self.acknowledged[item['consumer_uuid']] = \
                            item['consumer_generation']

    def _send(self, items):
        """Send until answered (the same keys every time)."""
        self._count('calls made')
        first = True
        began = time.monotonic()
        while True:
            if not first:
                self._count('retries')
            first = False
            attempt = time.monotonic()
            try:
                answer = self.rpc.call(
                    'allocate', rpc_timeout=self.rpc_timeout, items=items)
            except (messaging.MessagingTimeout, messaging.MessagingException,
                    kombu.exceptions.OperationalError, OSError) as error:
                self._took(attempt, None, type(error).__name__)
                if self.stopping.is_set() and self.figures['retries'] > 10000:
                    self._count('given up')
                    return None
                time.sleep(0.5)
                continue
            self._took(attempt, began, 'answered')
            self._count('calls answered')
            return answer

    def _took(self, attempt, began, outcome):
        now = time.monotonic()
        with self.lock:
            if outcome != 'answered':
                self.figures[outcome] += 1
            if now - attempt > self.worst_attempt:
                self.worst_attempt = now - attempt
                self.worst_outcome = outcome
            if began is not None:
                self.worst_call = max(self.worst_call, now - began)

    def _count(self, what, n=1):
        with self.lock:
            self.figures[what] += n

    def lost(self):
        """Acknowledged consumers the books do not show (must be none)."""
        missing = []
        uuids = list(self.acknowledged)
        for start in range(0, len(uuids), 500):
            chunk = uuids[start:start + 500]
            answer = self.rpc.call('get_allocations', consumer_uuids=chunk,
                                   rpc_timeout=60)
            missing += [i['consumer_uuid'] for i in answer['items']
                        if i['status'] != 200 or i['consumer_generation']
                        != self.acknowledged[i['consumer_uuid']]]
        return missing

    def report(self, name):
        lost = self.lost()
        print('\n%s: %s; acknowledged items %d; lost %d; statuses %s; '
              'worst attempt %.1f s (%s; timeout %s s); worst call until '
              'answered %.1f s'
              % (name, dict(self.figures), len(self.acknowledged), len(lost),
                 dict(self.statuses), self.worst_attempt, self.worst_outcome,
                 self.rpc_timeout, self.worst_call))
        return lost


def audit_clean(worker):
    """The audit of ``worker``'s books finds nothing wrong."""
    result = services.manage(worker.config_file, 'audit', '--grace-seconds',
                             '600', check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def answers_again(rpc, within, must=True):
    """Seconds until a call is answered again; after ``within`` seconds
    without an answer, fails (or answers None if not ``must``)."""
    started = time.monotonic()
    while time.monotonic() - started < within:
        try:
            rpc.call('list_resource_classes', rpc_timeout=2)
            return time.monotonic() - started
        except Exception:
            time.sleep(0.1)
    assert not must, 'no answer within %d s' % within
    return None


def finish(load, name, worker):
    """Stop ``load``: nothing acknowledged is lost, every call was
    answered, and the books' audit is clean."""
    load.stop()
    lost = load.report(name)
    assert lost == []
    assert load.figures['calls answered'] == load.figures['calls made']
    audit_clean(worker)


def database_restart_under_load(rpc, hosts, name, restart):
    """``restart()`` the database server under load: nothing acknowledged
    is lost, transactions in flight fail cleanly (500 items, nothing
    else), later calls succeed without restarting any worker, and the
    books' audit is clean."""
    load = Load(rpc, hosts).start()
    time.sleep(3)
    restart()
    time.sleep(8)
    load.stop()
    assert load.report(name) == []
    assert set(load.statuses) <= {(200, None), (500, 'internal_error')}
    after = Load(rpc, hosts, clients=2).start()
    time.sleep(3)
    after.stop()
    assert after.report('after the %s' % name) == []
    assert set(after.statuses) == {(200, None)}
    audit_clean(rpc.worker)
