"""The cloud ``candidates.py`` measures, loaded into one server: 100
sharing storage providers (DISK_GB, ``MISC_SHARES_VIA_AGGREGATE``, each
in an aggregate of its own) and compute trees of a root (no inventory;
it joins aggregate ``n % 100``) and two NUMA children holding VCPU and
MEMORY_MB (why the children: ``candidates.py``'s docstring). The same
layout two ways in: ``BulkLoader`` writes rows into allocworker's or
Placement 16's tables, ``http_sharing`` and ``http_trees`` go through a
server's own HTTP API (``peers.HttpPeer``).
"""

import datetime
import queue
import threading
import uuid

import sqlalchemy as sa

from allocworker.db import schema

SHARING = 100
NUMA_INVENTORY = {'VCPU': 32, 'MEMORY_MB': 131072}
DISK_GB = 100000
LOAD_THREADS = 16
VERSION = '1.36'


def aggregate(n):
    return str(uuid.UUID(int=n + 1))


def provider_id(tree, part=0):
    """Ids fixed by position (sharing providers first, then 3 per tree:
    root, numa0, numa1), so that trees can be added to a loaded cloud."""
    return SHARING + 3 * tree + part + 1


def sharing_rows():
    """(providers, inventories, members) of the sharing providers; a
    provider row is (id, uuid, name, parent id, root id)."""
    ids = range(1, SHARING + 1)
    return ([(i, str(uuid.uuid4()), 'storage-%d' % (i - 1), None, i)
             for i in ids], [(i, 'DISK_GB', DISK_GB) for i in ids],
            [(i, i - 1) for i in ids])


def tree_rows(first, last):
    """(providers, inventories, members) of trees ``first`` .. ``last - 1``."""
    providers, inventories, members = [], [], []
    for n in range(first, last):
        root = provider_id(n)
        providers.append((root, str(uuid.uuid4()), 'cn-%d' % n, None, root))
        members.append((root, n % SHARING))
        for numa in (0, 1):
            child = provider_id(n, numa + 1)
            providers.append((child, str(uuid.uuid4()),
                              'cn-%d-numa%d' % (n, numa), root, root))
            inventories.extend((child, rc, total)
                               for rc, total in NUMA_INVENTORY.items())
    return providers, inventories, members


def _insert(conn, table, rows):
    now = datetime.datetime.utcnow()
    for start in range(0, len(rows), 5000):
        chunk = rows[start:start + 5000]
        if 'created_at' in table.c:
            chunk = [dict(r, created_at=now) for r in chunk]
        if chunk:
            conn.execute(sa.insert(table), chunk)


class BulkLoader(object):
    """Rows straight into one server's tables: allocworker's (``schema``)
    or Placement 16's (reflected: Placement made them)."""

    def __init__(self, url, placement):
        self.engine = sa.create_engine(url)
        self.placement = placement
        if placement:
            tables = sa.MetaData()
            tables.reflect(self.engine)
            self.t = tables.tables
            self.providers = self.t['resource_providers']
            self.provider_key = 'resource_provider_id'
        else:
            self.t = {'resource_classes': schema.resource_classes,
                      'traits': schema.traits,
                      'inventories': schema.inventories}
            self.providers = schema.providers
            self.provider_key = 'provider_id'
        with self.engine.connect() as conn:
            self.classes = dict(conn.execute(sa.select(
                self.t['resource_classes'].c.name,
                self.t['resource_classes'].c.id)).all())
            self.shares = conn.execute(sa.select(
                self.t['traits'].c.id).where(self.t['traits'].c.name ==
                                             'MISC_SHARES_VIA_AGGREGATE'
                                             )).scalar()

    def load(self, rows, sharing=False):
        providers, inventories, members = rows
        # allocworker's inventories have a ``forced`` flag Placement lacks.
        extra = {} if self.placement else {'forced': False}
        with self.engine.begin() as conn:
            _insert(conn, self.providers, [
                {'id': i, 'uuid': u, 'name': n, 'generation': 1,
                 'parent_provider_id': p, 'root_provider_id': r}
                for i, u, n, p, r in providers])
            _insert(conn, self.t['inventories'], [
                dict(extra, resource_class_id=self.classes[rc], total=total,
                     reserved=0, min_unit=1, max_unit=total, step_size=1,
                     allocation_ratio=1.0, **{self.provider_key: p})
                for p, rc, total in inventories])
            if not self.placement:
                # Every inventory has its counter row (free: all of it).
                _insert(conn, schema.usages, [
                    {'provider_id': p, 'resource_class_id':
                     self.classes[rc], 'used': 0, 'free': total}
                    for p, rc, total in inventories])
            if self.placement:
                self._placement_facets(conn, rows, sharing)
            else:
                self._allocworker_facets(conn, rows, sharing)
            if conn.dialect.name == 'postgresql':
                conn.exec_driver_sql("SELECT setval('%s_id_seq', (SELECT "
                                     "max(id) FROM %s))" % ((
                                         self.providers.name,) * 2))
                conn.exec_driver_sql('ANALYZE')

    def _allocworker_facets(self, conn, rows, sharing):
        _insert(conn, schema.provider_aggregates, [
            {'provider_id': p, 'aggregate_uuid': aggregate(a)}
            for p, a in rows[2]])
        if sharing:
            _insert(conn, schema.provider_traits, [
                {'provider_id': p[0], 'trait_id': self.shares}
                for p in rows[0]])

    def _placement_facets(self, conn, rows, sharing):
        t = self.t
        if sharing:
            _insert(conn, t['placement_aggregates'], [
                {'id': n + 1, 'uuid': aggregate(n)} for n in range(SHARING)])
            _insert(conn, t['resource_provider_traits'], [
                {'resource_provider_id': p[0], 'trait_id': self.shares}
                for p in rows[0]])
        _insert(conn, t['resource_provider_aggregates'], [
            {'resource_provider_id': p, 'aggregate_id': a + 1}
            for p, a in rows[2]])

    def close(self):
        self.engine.dispose()


def _put(peer, provider, what, body, generation):
    body['resource_provider_generation'] = generation
    _, answer = peer.call('PUT', '/resource_providers/%s/%s'
                          % (provider, what), body, version=VERSION)
    return answer['resource_provider_generation']


def _inventories(totals):
    return {'inventories': {rc: {'total': total}
                            for rc, total in totals.items()}}


def http_sharing(peer):
    for n in range(SHARING):
        provider = peer.create_provider('storage-%d' % n)
        generation = _put(peer, provider, 'inventories',
                          _inventories({'DISK_GB': DISK_GB}), 0)
        generation = _put(peer, provider, 'traits', {
            'traits': ['MISC_SHARES_VIA_AGGREGATE']}, generation)
        _put(peer, provider, 'aggregates', {'aggregates': [aggregate(n)]},
             generation)


def http_tree(peer, n):
    root = peer.create_provider('cn-%d' % n)
    _put(peer, root, 'aggregates', {'aggregates': [aggregate(n % SHARING)]},
         0)
    for numa in (0, 1):
        child = peer.create_provider('cn-%d-numa%d' % (n, numa), parent=root)
        _put(peer, child, 'inventories', _inventories(NUMA_INVENTORY), 0)


def http_trees(peer, first, last):
    """Trees ``first`` .. ``last - 1`` from LOAD_THREADS threads."""
    work, errors = queue.Queue(), []
    for n in range(first, last):
        work.put(n)

    def loop():
        while not errors:
            try:
                n = work.get_nowait()
            except queue.Empty:
                return
            try:
                http_tree(peer, n)
            except Exception as exc:
                errors.append(exc)

    threads = [threading.Thread(target=loop) for _ in range(LOAD_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
