"""allocworker-manage db ...: the schema's revision and its upgrades."""

from allocworker.conf import CONF
from allocworker.db import migration


def db_sync():
    migration.sync(CONF.command.revision)
    print('database at revision %s' % migration.current())


def db_version():
    print(migration.current() or 'none (never synced)')
