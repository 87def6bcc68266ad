"""The fault suite shares the functional fixtures; it runs alone (after
the rest, one test at a time) because it stops and starts RabbitMQ and
PostgreSQL under everyone's feet, and starts a three-node RabbitMQ
cluster of its own (tools/rabbit-cluster.sh) beside the default node."""

import os

import pytest

from tests.faults import cluster
from tests.functional.conftest import (  # noqa: F401
    broker_clients_closed, database, ids, pytest_generate_tests, rpc,
    scratch, service_layer, topic, worker_count)


@pytest.fixture(scope='session')
def rabbit_cluster():
    """The three-node cluster, started if it was not running (and then
    stopped again at the end of the session)."""
    if not os.path.exists(cluster.RABBITMQ_SERVER):
        pytest.skip('no %s to start a cluster with' % cluster.RABBITMQ_SERVER)
    nodes = cluster.Cluster().start()
    yield nodes
    nodes.stop()


@pytest.fixture(scope='module')
def quorum_conf():
    """This process's clients use the cluster settings the workers use."""
    from oslo_config import cfg
    from oslo_messaging import opts
    for group, options in opts.list_opts():
        if group == 'oslo_messaging_rabbit':
            cfg.CONF.register_opts(options, group=group)
    for name, value in cluster.RABBIT_OPTIONS.items():
        cfg.CONF.set_override(name, value, group='oslo_messaging_rabbit')
    yield cfg.CONF
    for name in cluster.RABBIT_OPTIONS:
        cfg.CONF.clear_override(name, group='oslo_messaging_rabbit')
