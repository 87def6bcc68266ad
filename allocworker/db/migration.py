"""Schema upgrades (alembic) and the data every database starts with."""

import os

from alembic import command as alembic_command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
import os_resource_classes

from allocworker.db import api
from allocworker.db.catalog import resource_classes
from allocworker.db.catalog import traits


def _alembic_config(connection=None):
    here = os.path.join(os.path.dirname(__file__), 'migrations')
    cfg = alembic_config.Config(os.path.join(here, 'alembic.ini'))
    cfg.set_main_option('script_location', here)
    cfg.attributes['connection'] = connection
    return cfg


def head():
    script = alembic_script.ScriptDirectory.from_config(_alembic_config())
    return script.get_current_head()


def current():
    """The database's revision, or None when it has never been synced."""
    with api.get_engine().connect() as conn:
        return alembic_migration.MigrationContext.configure(
            conn).get_current_revision()


def upgrade(conn, revision):
    """Bring the schema of ``conn``'s database to ``revision``, nothing
    else (``sync`` adds the standard names)."""
    alembic_command.upgrade(_alembic_config(conn), revision)


def sync(revision='head'):
    """Bring the schema to ``revision``, then make sure the standard
    resource classes and traits (os-resource-classes, os-traits) exist."""
    # Imported here: the other schema commands (db version, the upgrade
    # check) need not load the names of every standard trait.
    import os_traits

    # Not in a transaction of ours: each migration commits on its own
    # (env.py), so a sync under load never holds one migration's locks
    # while waiting for the next one's.
    with api.get_engine().connect() as conn:
        upgrade(conn, revision)
    with api.writer() as conn:
        resource_classes.ensure(conn, os_resource_classes.STANDARDS)
        traits.ensure(conn, os_traits.get_traits())
