"""The judgement of database settings that lose acknowledged writes
(allocworker-status upgrade check)."""

from allocworker.db import durability

SAFE_MYSQL = {'innodb_flush_log_at_trx_commit': '1',
              'innodb_doublewrite': 'ON', 'log_bin': 'OFF',
              'sync_binlog': '0', 'wsrep_on': 'OFF', 'wait_timeout': '28800'}
GALERA = dict(SAFE_MYSQL, wsrep_on='ON', log_bin='ON',
              wsrep_cluster_status='Primary', wsrep_cluster_size='3')


def test_safe_servers_have_nothing_to_report():
    assert durability.judge_mysql(SAFE_MYSQL, 3600) == []
    assert durability.judge_mysql(GALERA, 280) == []
    assert durability.judge_postgresql(
        {'fsync': 'on', 'synchronous_commit': 'on',
         'full_page_writes': 'on', 'synchronous_standby_names': '',
         'streaming_replicas': 0}) == []
    assert durability.judge_postgresql(
        {'synchronous_commit': 'remote_apply', 'streaming_replicas': 1,
         'synchronous_standby_names': 'replica1'}) == []


def test_mysql_settings_that_lose_commits():
    found = durability.judge_mysql(
        dict(SAFE_MYSQL, innodb_flush_log_at_trx_commit='2', log_bin='ON',
             innodb_doublewrite='OFF'), 3600)
    assert len(found) == 3
    assert found[0].startswith('innodb_flush_log_at_trx_commit = 2')
    assert 'set 1' in found[0]
    assert found[2].startswith('sync_binlog = 0 with binary logging')


def test_galera_node_out_of_quorum_or_cluster_too_small():
    found = durability.judge_mysql(
        dict(GALERA, wsrep_cluster_status='non-Primary',
             wsrep_cluster_size='2'), 280)
    assert 'non-Primary, not in the Primary Component' in found[0]
    assert 'has 2 node(s)' in found[1]


def test_recycling_not_below_the_servers_idle_timeout():
    found, = durability.judge_mysql(dict(SAFE_MYSQL, wait_timeout='300'),
                                    300)
    assert 'connection_recycle_time = 300' in found
    assert 'HAProxy' in found


def test_postgresql_settings_that_lose_commits():
    assert len(durability.judge_postgresql(
        {'fsync': 'off', 'full_page_writes': 'off',
         'synchronous_commit': 'off'})) == 3
    found, = durability.judge_postgresql(
        {'streaming_replicas': 2, 'synchronous_standby_names': ''})
    assert 'streaming replicas are asynchronous' in found
    found, = durability.judge_postgresql(
        {'streaming_replicas': 1, 'synchronous_standby_names': 'r1',
         'synchronous_commit': 'local'})
    assert 'synchronous_commit = local' in found
