"""Migrations bring every backend to head, and the tables they make are
exactly the tables the code declares."""

import json
import os
import subprocess

from alembic import autogenerate
from alembic import migration as alembic_migration
import sqlalchemy as sa

from allocworker.db import migration
from allocworker.db import schema
from tests.functional import services


def test_db_sync_reaches_head_and_version_prints_it(database, scratch):
    config = '%s/sync.conf' % scratch
    printed = services.manage(config, 'db', 'version').stdout.strip()
    assert printed == migration.head()


def test_models_and_migrations_agree(database):
    engine = sa.create_engine(database)
    try:
        with engine.connect() as conn:
            context = alembic_migration.MigrationContext.configure(
                conn, opts={'compare_type': True,
                            'compare_server_default': False})
            diff = autogenerate.compare_metadata(context, schema.metadata)
    finally:
        engine.dispose()
    assert diff == []


def test_db_sync_is_idempotent_and_seeds_standard_classes(database, scratch):
    config = '%s/sync.conf' % scratch
    services.manage(config, 'db', 'sync')
    listed = json.loads(services.manage(
        config, 'resource-class', 'list', '--format', 'json').stdout)
    names = {row['name'] for row in listed}
    assert {'VCPU', 'MEMORY_MB', 'DISK_GB', 'PCI_DEVICE', 'SRIOV_NET_VF',
            'VGPU'} <= names


def test_status_upgrade_check(database, scratch, backend):
    status = os.path.join(services.BIN, 'allocworker-status')
    synced = subprocess.run(
        [status, '--config-file', '%s/sync.conf' % scratch, 'upgrade',
         'check', '--json'], capture_output=True, text=True, timeout=120)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    checks = {c['check']: c['result'] for c in
              json.loads(synced.stdout)['checks']}
    assert checks == {'Database reachable': 0, 'Schema at head': 0,
                      'Acknowledged commits survive a crash': 0,
                      'Message broker reachable': 0}
    with services.fresh_database(backend, scratch + '/empty') as empty:
        os.makedirs(scratch + '/empty', exist_ok=True)
        config = services.write_config(scratch + '/empty/aw.conf', empty,
                                       'unused')
        unsynced = subprocess.run(
            [status, '--config-file', config, 'upgrade', 'check', '--json'],
            capture_output=True, text=True, timeout=120)
    assert unsynced.returncode == 2, unsynced.stdout
    schema_check, = [c for c in json.loads(unsynced.stdout)['checks']
                     if c['check'] == 'Schema at head']
    assert 'allocworker-manage db sync' in schema_check['details']


def test_upgrade_from_the_single_counter_keeps_generations_rising(
        backend, scratch):
    """Databases from revision 0004 counted generations database-wide; the
    counter's last value becomes the floor of every new object."""
    where = os.path.join(scratch, 'upgrade')
    os.makedirs(where, exist_ok=True)
    with services.fresh_database(backend, where) as url:
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                migration.upgrade(conn, '0004')
                for _ in range(3):
                    conn.execute(sa.insert(sa.table('generations')))
            with engine.begin() as conn:
                migration.upgrade(conn, 'head')
            with engine.connect() as conn:
                floors = conn.execute(sa.text(
                    "SELECT kind, generation FROM retired_generations "
                    "WHERE uuid = '*'")).all()
        finally:
            engine.dispose()
    assert sorted(tuple(f) for f in floors) == [
        ('consumer', 3), ('group', 3), ('provider', 3)]
