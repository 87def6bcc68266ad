"""The per-project usage counters (``project_usages``,
``project_consumers``): kept equal to the books by every write, under
random concurrent writes of many clients through several worker
processes; the audit finds a counter that drifted and ``db refresh-room``
corrects it; the migration fills them from the books it finds."""

import collections
import json
import os
import random
import threading
import uuid

import sqlalchemy as sa

from allocworker.db import migration
from tests.functional import services
from tests.functional.helpers import alloc_item, in_parallel, provider

PROJECTS = ['p-%d' % n for n in range(4)]
TYPES = ['INSTANCE', 'MIGRATION', 'INSTANCE', None]


def recount(conn):
    """What the books hold, counted here without the project counters'
    own code: ({(project, type, class id): used}, {(project, type):
    consumers}), zeros left out."""
    used = {tuple(row[:3]): int(row[3]) for row in conn.exec_driver_sql(
        'SELECT c.project_id, c.consumer_type, a.resource_class_id, '
        'SUM(a.used) FROM consumers c JOIN allocations a '
        'ON a.consumer_id = c.id '
        'GROUP BY c.project_id, c.consumer_type, a.resource_class_id')}
    consumers = {tuple(row[:2]): int(row[2]) for row in conn.exec_driver_sql(
        'SELECT project_id, consumer_type, COUNT(*) FROM consumers '
        'GROUP BY project_id, consumer_type')}
    return used, consumers


def counters(conn):
    """The counters, each the sum of its shard rows and of its entry in
    the project's lock row ({type: {'': consumers, 'class id': used}}),
    zeros left out."""
    used, consumers = collections.Counter(), collections.Counter()
    for row in conn.exec_driver_sql(
            'SELECT project_id, consumer_type, resource_class_id, used '
            'FROM project_usages'):
        used[tuple(row[:3])] += int(row[3])
    for row in conn.exec_driver_sql(
            'SELECT project_id, consumer_type, consumers '
            'FROM project_consumers'):
        consumers[tuple(row[:2])] += int(row[2])
    for project, counts in conn.exec_driver_sql(
            'SELECT project_id, counts FROM project_locks '
            'WHERE counts IS NOT NULL'):
        for kind, found in json.loads(counts).items():
            for key, amount in found.items():
                if key:
                    used[(project, kind, int(key))] += amount
                else:
                    consumers[(project, kind)] += amount
    return ({k: v for k, v in used.items() if v},
            {k: v for k, v in consumers.items() if v})


def books_and_counters(database):
    engine = sa.create_engine(database)
    try:
        with engine.connect() as conn:
            return recount(conn), counters(conn)
    finally:
        engine.dispose()


class Writer(object):
    """One client's random writes: new consumers, resizes, moves to
    another project and type, deletes, independent and atomic batches;
    some on consumers other clients hold (generation conflicts). ``rpc``
    may be a list of clients (of worker sets configured apart), one
    drawn for each call."""

    def __init__(self, rpc, hosts, shared, seed):
        self.rpc, self.hosts, self.shared = rpc, hosts, shared
        self.random = random.Random(seed)
        self.mine = {}
        self.statuses = []

    def allocations(self):
        hosts = self.random.sample(self.hosts, self.random.randint(1, 2))
        return {h: {'VCPU': self.random.randint(1, 4),
                    'MEMORY_MB': 64 * self.random.randint(1, 4)}
                for h in hosts}

    def item(self, consumer=None, generation=None, empty=False):
        extra = {}
        kind = self.random.choice(TYPES)
        if kind:
            extra['consumer_type'] = kind
        return alloc_item(consumer or str(uuid.uuid4()),
                          {} if empty else self.allocations(), generation,
                          project=self.random.choice(PROJECTS), **extra)

    def pick(self):
        if self.random.random() < 0.2 and self.shared:
            with self.shared_lock:
                return self.random.choice(list(self.shared.items()))
        if self.mine:
            return self.random.choice(list(self.mine.items()))
        return None, None

    shared_lock = threading.Lock()

    def step(self):
        roll = self.random.random()
        consumer, generation = self.pick()
        if roll < 0.3 or consumer is None:
            items = [self.item()]
        elif roll < 0.55:
            items = [self.item(consumer, generation)]
        elif roll < 0.7:
            items = [self.item(consumer, generation, empty=True)]
        else:
            items = [self.item() for _ in range(self.random.randint(2, 6))]
            if consumer is not None:
                items.append(self.item(consumer, generation,
                                       empty=self.random.random() < 0.3))
        atomic = len(items) > 1 and self.random.random() < 0.3
        client = (self.random.choice(self.rpc)
                  if isinstance(self.rpc, list) else self.rpc)
        answer = client.allocate(items=items, atomic=atomic)['items']
        for sent, got in zip(items, answer):
            self.statuses.append(got['status'])
            if got['status'] != 200:
                continue
            uuid_ = sent['consumer_uuid']
            if sent['allocations']:
                self.mine[uuid_] = got['consumer_generation']
                with self.shared_lock:
                    self.shared[uuid_] = got['consumer_generation']
            else:
                self.mine.pop(uuid_, None)
                with self.shared_lock:
                    self.shared.pop(uuid_, None)

    def run(self, steps):
        for _ in range(steps):
            self.step()
        return self


def test_counters_equal_the_books_after_random_concurrent_writes(
        rpc, database, scratch):
    hosts = [provider(rpc, {'VCPU': {'total': 400},
                            'MEMORY_MB': {'total': 40000}})[0]
             for _ in range(3)]
    shared = {}
    writers = in_parallel(
        lambda seed: Writer(rpc, hosts, shared, seed).run(25), range(12),
        clients=12)
    statuses = [s for w in writers for s in w.statuses]
    assert statuses.count(200) > 200, statuses
    assert set(statuses) <= {200, 409, 424}, set(statuses)
    (used, consumers), (counted_used, counted_consumers) = \
        books_and_counters(database)
    assert used and consumers
    assert counted_used == used
    assert counted_consumers == consumers
    assert services.manage('%s/sync.conf' % scratch, 'audit').returncode == 0


def test_audit_catches_a_project_counter_that_drifted(rpc, database,
                                                      scratch):
    host, _ = provider(rpc, {'VCPU': {'total': 100}})
    project = 'drift-%s' % uuid.uuid4().hex[:8]
    for _ in range(2):
        item = rpc.allocate(items=[alloc_item(
            str(uuid.uuid4()), {host: {'VCPU': 3}}, project=project)])
        assert item['items'][0]['status'] == 200, item
    engine = sa.create_engine(database)
    try:
        with engine.begin() as conn:
            # One row of the VCPU count (the two writes may have moved
            # two of its shards).
            row = conn.exec_driver_sql(
                "SELECT consumer_type, resource_class_id, shard "
                "FROM project_usages WHERE project_id = '%s' AND "
                "resource_class_id = (SELECT id FROM resource_classes "
                "WHERE name = 'VCPU')" % project).first()
            conn.exec_driver_sql(
                "UPDATE project_usages SET used = used + 5 "
                "WHERE project_id = '%s' AND consumer_type = '%s' AND "
                "resource_class_id = %d AND shard = %d"
                % ((project,) + tuple(row)))
            conn.exec_driver_sql(
                "DELETE FROM project_consumers WHERE project_id = '%s'"
                % project)
        broken = services.manage('%s/sync.conf' % scratch, 'audit',
                                 '--format', 'json', check=False)
        assert broken.returncode == 1
        breaches = json.loads(broken.stdout)['breaches']
        assert [b['invariant'] for b in breaches] == [
            'project usage counter differs from the allocations']
        assert sorted((r['counter'], r['resource_class'], r['counted'],
                       r['held']) for r in breaches[0]['rows']) == [
            ('consumers', None, 0, 2), ('used', 'VCPU', 11, 6)]
        fixed = services.manage('%s/sync.conf' % scratch, 'db',
                                'refresh-room')
        assert 'project usage corrected on 2 counter' in fixed.stdout
    finally:
        engine.dispose()
    assert services.manage('%s/sync.conf' % scratch, 'audit').returncode == 0


def test_the_migration_fills_the_counters_from_the_books(backend, scratch):
    where = os.path.join(scratch, 'fill')
    os.makedirs(where, exist_ok=True)
    with services.fresh_database(backend, where) as url:
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                migration.upgrade(conn, '0008')
                _books_at_0008(conn)
            with engine.begin() as conn:
                migration.upgrade(conn, 'head')
            with engine.connect() as conn:
                books, found = recount(conn), counters(conn)
                classes = dict(conn.exec_driver_sql(
                    'SELECT name, id FROM resource_classes').all())
        finally:
            engine.dispose()
    assert found == books
    vcpu, memory = classes['VCPU'], classes['MEMORY_MB']
    assert found == (
        {('a', 'INSTANCE', vcpu): 6, ('a', 'INSTANCE', memory): 512,
         ('a', 'MIGRATION', vcpu): 4, ('b', '', vcpu): 1},
        {('a', 'INSTANCE'): 2, ('a', 'MIGRATION'): 1, ('b', ''): 1})


def _books_at_0008(conn):
    now = "'2026-12-01 00:00:00'"
    for name in ('VCPU', 'MEMORY_MB'):
        conn.exec_driver_sql(
            "INSERT INTO resource_classes (name, created_at) "
            "VALUES ('%s', %s)" % (name, now))
    for n in range(2):
        conn.exec_driver_sql(
            "INSERT INTO providers (uuid, name, generation, created_at) "
            "VALUES ('%s', 'rp%d', 1, %s)" % (uuid.uuid4(), n, now))
    providers = [r[0] for r in conn.exec_driver_sql(
        'SELECT id FROM providers ORDER BY id')]
    classes = dict(conn.exec_driver_sql(
        'SELECT name, id FROM resource_classes').all())
    held = [('a', 'INSTANCE', {(0, 'VCPU'): 2, (1, 'VCPU'): 2,
                               (0, 'MEMORY_MB'): 512}),
            ('a', 'INSTANCE', {(1, 'VCPU'): 2}),
            ('a', 'MIGRATION', {(0, 'VCPU'): 4}),
            ('b', '', {(1, 'VCPU'): 1})]
    for project, kind, rows in held:
        consumer = str(uuid.uuid4())
        conn.exec_driver_sql(
            "INSERT INTO consumers (uuid, project_id, user_id, "
            "consumer_type, generation, created_at) "
            "VALUES ('%s', '%s', 'u', '%s', 1, %s)"
            % (consumer, project, kind, now))
        consumer_id = conn.exec_driver_sql(
            "SELECT id FROM consumers WHERE uuid = '%s'" % consumer).scalar()
        for (p, name), used in rows.items():
            conn.exec_driver_sql(
                'INSERT INTO allocations (consumer_id, provider_id, '
                'resource_class_id, used, created_at) '
                'VALUES (%d, %d, %d, %d, %s)'
                % (consumer_id, providers[p], classes[name], used, now))
