"""Migrations bring every backend to head, and the tables they make are
exactly the tables the code declares."""

import datetime
import json
import os
import subprocess
import uuid

from alembic import autogenerate
from alembic import migration as alembic_migration
import pytest
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


def test_upgrade_to_partitions_puts_providers_in_default(backend, scratch):
    """Revision 0012 gives providers a partition: those it finds land in
    ``default``, and names become unique per partition (RPC 1.6)."""
    where = os.path.join(scratch, 'partitions')
    os.makedirs(where, exist_ok=True)
    insert = sa.text(
        "INSERT INTO providers (uuid, name, generation, parent_provider_id, "
        "root_provider_id, created_at) VALUES (:uuid, :name, 1, :parent, "
        ":root, :now)")
    with services.fresh_database(backend, where) as url:
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                migration.upgrade(conn, '0011')
                for name, parent in (('host-a', None), ('host-b', None),
                                     ('host-a-nic', 'host-a')):
                    if parent is not None:
                        parent = conn.execute(sa.text(
                            'SELECT id FROM providers WHERE name = :name'),
                            {'name': parent}).scalar()
                    conn.execute(insert, {
                        'uuid': str(uuid.uuid4()), 'name': name,
                        'parent': parent, 'root': None,
                        'now': datetime.datetime(2026, 12, 1)})
                conn.execute(sa.text(
                    'UPDATE providers SET root_provider_id = '
                    'COALESCE(parent_provider_id, id)'))
            with engine.begin() as conn:
                migration.upgrade(conn, 'head')
            with engine.connect() as conn:
                found = conn.execute(sa.text(
                    'SELECT name, %s FROM providers ORDER BY name'
                    % _column(engine, 'partition'))).all()
            # A name is taken per partition now: once more elsewhere...
            with engine.begin() as conn:
                conn.execute(_insert('host-a', partition='east'))
                # (a writer that names none, an older worker's, writes
                # into ``default``)
                conn.execute(_insert('host-c'))
                defaulted = conn.execute(sa.text(
                    "SELECT %s FROM providers WHERE name = 'host-c'"
                    % _column(engine, 'partition'))).scalar()
            # ... but not twice in one.
            with pytest.raises(sa.exc.IntegrityError):
                with engine.begin() as conn:
                    conn.execute(_insert('host-b', partition='default'))
            indexes = {i['name'] for i in sa.inspect(engine).get_indexes(
                'providers')}
        finally:
            engine.dispose()
    assert [tuple(row) for row in found] == [
        ('host-a', 'default'), ('host-a-nic', 'default'),
        ('host-b', 'default')]
    assert 'ix_providers_name' in indexes
    assert defaulted == 'default'


def _insert(name, **partition):
    return sa.insert(schema.providers).values(
        uuid=str(uuid.uuid4()), name=name, generation=1,
        created_at=datetime.datetime.now(), **partition)


def _column(engine, name):
    """``name`` quoted as the backend needs (MySQL reserves PARTITION)."""
    return engine.dialect.identifier_preparer.quote(name)
