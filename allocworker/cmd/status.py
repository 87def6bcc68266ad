"""allocworker-status upgrade check: is this deployment ready to serve?"""

import sys

from oslo_upgradecheck import upgradecheck

from allocworker.conf import CONF

Code = upgradecheck.Code
Result = upgradecheck.Result


class Checks(upgradecheck.UpgradeCommands):
    """Each check imports what it checks when it runs: help, and a usage
    error, need neither the database machinery nor oslo.messaging."""

    def _check_database(self):
        from allocworker.db import api as db
        try:
            db.configure(CONF)
            with db.reader() as conn:
                conn.exec_driver_sql('SELECT 1')
        except Exception as exc:
            return Result(Code.FAILURE, 'cannot reach the database: %s'
                          % str(exc).splitlines()[0])
        return Result(Code.SUCCESS)

    def _check_schema(self):
        from allocworker.db import api as db
        from allocworker.db import migration
        try:
            db.configure(CONF)
            current, head = migration.current(), migration.head()
        except Exception as exc:
            return Result(Code.FAILURE, 'cannot read the schema revision: %s'
                          % str(exc).splitlines()[0])
        if current != head:
            return Result(Code.FAILURE,
                          'schema is at %s, code needs %s: run '
                          '"allocworker-manage db sync"' % (current, head))
        return Result(Code.SUCCESS)

    def _check_durability(self):
        """Settings that lose acknowledged writes: a warning, since the
        books stay consistent but a crash or failover can undo answers."""
        from allocworker.db import api as db
        from allocworker.db import durability
        try:
            db.configure(CONF)
            with db.reader() as conn:
                found = durability.risks(
                    conn, CONF.database.connection_recycle_time)
        except Exception as exc:
            return Result(Code.FAILURE, 'cannot read the database '
                          'settings: %s' % str(exc).splitlines()[0])
        if found:
            return Result(Code.WARNING, '; '.join(found))
        return Result(Code.SUCCESS)

    def _check_broker(self):
        import kombu
        import oslo_messaging as messaging

        from allocworker import rpc
        try:
            rpc.get_transport()  # registers [DEFAULT] transport_url
            url = messaging.TransportURL.parse(CONF, CONF.transport_url)
            if not url.transport.startswith('rabbit'):
                return Result(Code.SUCCESS, 'broker check skipped for %s://'
                              % url.transport)
            host = url.hosts[0]
            connection = kombu.Connection(
                hostname=host.hostname, port=host.port or 5672,
                userid=host.username or 'guest',
                password=host.password or 'guest',
                virtual_host=url.virtual_host or '/',
                ssl=CONF.oslo_messaging_rabbit.ssl, connect_timeout=5)
            with connection:
                connection.ensure_connection(max_retries=1)
        except Exception as exc:
            return Result(Code.FAILURE, 'cannot reach the message broker: %s'
                          % str(exc).splitlines()[0])
        finally:
            rpc.cleanup()
        return Result(Code.SUCCESS)

    _upgrade_checks = (
        ('Database reachable', _check_database),
        ('Schema at head', _check_schema),
        ('Acknowledged commits survive a crash', _check_durability),
        ('Message broker reachable', _check_broker),
    )


def main():
    return upgradecheck.main(CONF, project='allocworker',
                             upgrade_command=Checks())


if __name__ == '__main__':
    sys.exit(main())
