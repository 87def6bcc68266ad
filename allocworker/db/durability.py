"""The database server's settings that decide whether a commit the worker
acknowledged survives a crash or a failover, read and judged for
``allocworker-status upgrade check``.

Each finding is a sentence naming the setting, what it loses, and the
value to set. Reading is per backend; judging is pure (``judge_*``).
"""

MYSQL_VARIABLES = ('innodb_flush_log_at_trx_commit', 'innodb_doublewrite',
                   'log_bin', 'sync_binlog', 'wsrep_on', 'wait_timeout')
MYSQL_STATUS = ('wsrep_cluster_status', 'wsrep_cluster_size')
POSTGRESQL_SETTINGS = ('fsync', 'synchronous_commit', 'full_page_writes',
                       'synchronous_standby_names')


def risks(conn, recycle_seconds):
    """Findings on the server ``conn`` reaches ([] when none)."""
    if conn.dialect.name == 'mysql':
        return judge_mysql(_mysql_settings(conn), recycle_seconds)
    if conn.dialect.name == 'postgresql':
        settings = dict(conn.exec_driver_sql(
            'SELECT name, setting FROM pg_settings WHERE name IN (%s)'
            % ', '.join("'%s'" % n for n in POSTGRESQL_SETTINGS)).fetchall())
        settings['streaming_replicas'] = conn.exec_driver_sql(
            'SELECT count(*) FROM pg_stat_replication').scalar()
        return judge_postgresql(settings)
    return []


def _mysql_settings(conn):
    names = ', '.join("'%s'" % n for n in MYSQL_VARIABLES + MYSQL_STATUS)
    settings = {}
    for table in ('GLOBAL_VARIABLES', 'GLOBAL_STATUS'):
        settings.update((name.lower(), value) for name, value in
                        conn.exec_driver_sql(
                            'SELECT VARIABLE_NAME, VARIABLE_VALUE FROM '
                            'information_schema.%s WHERE LOWER(VARIABLE_NAME)'
                            ' IN (%s)' % (table, names)))
    return settings


def judge_mysql(settings, recycle_seconds):
    found = []
    flush = settings.get('innodb_flush_log_at_trx_commit', '1')
    if flush != '1':
        found.append(
            'innodb_flush_log_at_trx_commit = %s: commits acknowledged in '
            'the last second are lost when the server crashes (on Galera '
            'when every node does, as Jepsen showed); set 1' % flush)
    if settings.get('innodb_doublewrite', 'ON').upper() == 'OFF':
        found.append('innodb_doublewrite = OFF: a crash can leave torn '
                     'pages; set ON')
    galera = settings.get('wsrep_on', 'OFF').upper() == 'ON'
    if settings.get('log_bin', 'OFF').upper() == 'ON' and not galera and \
            settings.get('sync_binlog', '1') != '1':
        found.append(
            'sync_binlog = %s with binary logging: a crash can lose '
            'acknowledged commits from the binary log, so replicas never '
            'get them; set 1' % settings['sync_binlog'])
    if galera:
        status = settings.get('wsrep_cluster_status', '')
        if status != 'Primary':
            found.append('this Galera node is %s, not in the Primary '
                         'Component: it refuses writes'
                         % (status or 'not clustered'))
        size = int(settings.get('wsrep_cluster_size') or 0)
        if 0 < size < 3:
            found.append('the Galera cluster has %d node(s): one failure '
                         'costs it its quorum; run 3' % size)
    wait = int(settings.get('wait_timeout') or 0)
    if wait and recycle_seconds >= wait:
        found.append(
            '[database] connection_recycle_time = %d is not below the '
            "server's wait_timeout (%d s): idle connections are closed under "
            'the workers; keep it below that and below any proxy\'s idle '
            'timeout (HAProxy: timeout client and timeout server)'
            % (recycle_seconds, wait))
    return found


def judge_postgresql(settings):
    found = []
    if settings.get('fsync', 'on') == 'off':
        found.append('fsync = off: a crash can lose or corrupt '
                     'acknowledged commits; set on')
    if settings.get('full_page_writes', 'on') == 'off':
        found.append('full_page_writes = off: a crash can leave torn '
                     'pages; set on')
    commit = settings.get('synchronous_commit', 'on')
    if commit == 'off':
        found.append('synchronous_commit = off: commits acknowledged just '
                     'before a crash are lost; set on (or remote_apply '
                     'with a synchronous standby)')
    standbys = settings.get('synchronous_standby_names', '')
    if settings.get('streaming_replicas') and not standbys:
        found.append(
            'streaming replicas are asynchronous (synchronous_standby_names '
            'is empty): promoting one after the primary dies loses the '
            'commits it had not received; name them in '
            'synchronous_standby_names with synchronous_commit = '
            'remote_apply')
    elif standbys and commit == 'local':
        found.append('synchronous_commit = local: commits do not wait for '
                     'the synchronous standbys; set remote_apply')
    return found
