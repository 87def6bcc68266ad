"""The project counters with limits on beside limits off: a writer
holding a project's lock moves the project's counts in its lock row,
every other write (deletes, consumers leaving a project, exempt writes,
workers with limits off) moves shard rows. Random concurrent writes
through limits-on and limits-off worker processes serving one topic at
once leave the two adding up to the books; the limits read what the
books hold; the audit finds a lock row that drifted, and ``db
refresh-room`` corrects it."""

import json
import os
import time
import uuid

import pytest
import sqlalchemy as sa

from tests.functional import keystone as keystone_service
from tests.functional import services
from tests.functional.helpers import alloc_item, in_parallel, one, provider
from tests.functional.test_project_counters import (
    PROJECTS, Writer, counters, recount)


@pytest.fixture(scope='module')
def limited(rpc, database, scratch, keystone):
    """A client of three more worker processes on ``rpc``'s database,
    on a topic of their own, judging by ``keystone``'s limits."""
    where = os.path.join(scratch, 'limited')
    os.makedirs(where, exist_ok=True)
    topic = 'aw-test-%s' % uuid.uuid4().hex[:8]
    config = services.write_config(
        os.path.join(where, 'worker.conf'), database, topic, workers=3,
        extra=keystone_service.WORKER_CONFIG.format(stale_seconds=60)
        + keystone.oslo_limit_config())
    client = services.BareClient(topic)
    worker = services.Worker(config)
    try:
        worker.start(client)
        deadline = time.monotonic() + 30
        while not client.get_limits(project_id=PROJECTS[0])['items']:
            assert time.monotonic() < deadline, 'no limits read in 30 s'
            time.sleep(0.2)
        yield client
    finally:
        assert worker.stop() == 0


def _locked_rows(database):
    engine = sa.create_engine(database)
    try:
        with engine.connect() as conn:
            return dict(conn.exec_driver_sql(
                'SELECT project_id, counts FROM project_locks '
                'WHERE counts IS NOT NULL').all())
    finally:
        engine.dispose()


def test_locked_and_shard_counts_add_up_to_the_books(rpc, limited, database,
                                                     scratch):
    hosts = [provider(rpc, {'VCPU': {'total': 400},
                            'MEMORY_MB': {'total': 40000}})[0]
             for _ in range(3)]
    shared = {}
    writers = in_parallel(
        lambda seed: Writer([rpc, limited], hosts, shared, seed).run(25),
        range(12),
        clients=12)
    statuses = [s for w in writers for s in w.statuses]
    assert statuses.count(200) > 200, statuses
    assert set(statuses) <= {200, 403, 409, 424}, set(statuses)
    # Both kinds of writer wrote: judged writes moved lock rows.
    assert set(_locked_rows(database)) & set(PROJECTS)
    engine = sa.create_engine(database)
    try:
        with engine.connect() as conn:
            (used, consumers), found = recount(conn), counters(conn)
            vcpu = conn.exec_driver_sql(
                "SELECT id FROM resource_classes WHERE name = 'VCPU'"
            ).scalar()
    finally:
        engine.dispose()
    assert found == (used, consumers)
    assert services.manage('%s/sync.conf' % scratch, 'audit').returncode == 0
    # What a limits-on worker reports is what the books hold (INSTANCE
    # counted).
    for project in PROJECTS:
        limits = {i['resource']: i['usage']
                  for i in limited.get_limits(project_id=project)['items']}
        assert limits['class:VCPU'] == used.get(
            (project, 'INSTANCE', vcpu), 0)
        assert limits['servers'] == consumers.get((project, 'INSTANCE'), 0)


def test_audit_catches_a_lock_row_that_drifted(rpc, limited, database,
                                               scratch):
    host, _ = provider(rpc, {'VCPU': {'total': 1000}})
    project = 'drift-%s' % uuid.uuid4().hex[:8]
    for client in [rpc, limited] * 12:
        assert one(client.allocate(items=[alloc_item(
            str(uuid.uuid4()), {host: {'VCPU': 3}}, project=project)]
        ))['status'] == 200
    counts = json.loads(_locked_rows(database)[project])
    kind, = counts
    counts[kind][''] += 2
    engine = sa.create_engine(database)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text('UPDATE project_locks SET counts = :c '
                                 'WHERE project_id = :p'),
                         {'c': json.dumps(counts), 'p': project})
    finally:
        engine.dispose()
    broken = services.manage('%s/sync.conf' % scratch, 'audit',
                             '--format', 'json', check=False)
    assert broken.returncode == 1
    rows = json.loads(broken.stdout)['breaches'][0]['rows']
    assert [(r['project_id'], r['consumer_type'], r['counter'],
             r['counted'], r['held']) for r in rows] == [
        (project, kind, 'consumers', 26, 24)]
    fixed = services.manage('%s/sync.conf' % scratch, 'db', 'refresh-room')
    assert 'project usage corrected on 1 counter' in fixed.stdout
    assert services.manage('%s/sync.conf' % scratch, 'audit').returncode == 0
    limits = {i['resource']: i['usage']
              for i in limited.get_limits(project_id=project)['items']}
    assert limits['servers'] == 24
