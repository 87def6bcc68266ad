"""Health checks, as oslo.middleware's healthcheck backends (entry points
``oslo.middleware.healthcheck``: ``allocworker_database``,
``allocworker_broker``, ``allocworker_workers``), and the two healthcheck
applications built from them.

The API answers ``GET /healthcheck`` with ``[healthcheck] backends``
(default here: ``disable_by_file`` and ``allocworker_database``), so an
operator drains a node by creating ``[healthcheck]
disable_by_file_path``. The worker's probe, on its metrics port, checks
what a worker needs to serve at all (the database, the broker, its
processes) and never reads the drain file: a supervisor restarting a
drained worker would be wrong.
"""

import kombu
from oslo_config import cfg
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts
from oslo_middleware import healthcheck
from oslo_middleware.healthcheck import opts as healthcheck_opts
from oslo_middleware.healthcheck import pluginbase

from allocworker.conf import CONF
from allocworker.db.ledger import gauges as db_gauges

API_BACKENDS = ['disable_by_file', 'allocworker_database']
WORKER_BACKENDS = ['allocworker_database', 'allocworker_broker',
                   'allocworker_workers']
# Seconds the broker probe waits for each broker host.
BROKER_TIMEOUT = 3

# (alive, wanted) worker processes; set by the worker's parent.
_processes = None


def watch_processes(count):
    """Let ``allocworker_workers`` ask ``count()`` -> (alive, wanted)."""
    global _processes
    _processes = count


def _result(available, reason, details=None):
    return pluginbase.HealthcheckResult(available, reason, details)


class DatabaseCheck(pluginbase.HealthcheckBaseExtension):
    """Available while the database accepts a connection and answers."""

    def healthcheck(self, server_port):
        try:
            db_gauges.ping(CONF.database.connection)
        except Exception as exc:
            return _result(False, 'DATABASE UNREACHABLE',
                           '%s: %s' % (type(exc).__name__, exc))
        return _result(True, 'OK', 'the database answers')


class BrokerCheck(pluginbase.HealthcheckBaseExtension):
    """Available while one broker of ``transport_url`` takes an AMQP
    login (the workers' own connections fail over the same way)."""

    def healthcheck(self, server_port):
        url = messaging.TransportURL.parse(CONF, _transport_url())
        if url.transport not in ('rabbit', 'amqp', 'kombu') or not url.hosts:
            return _result(True, 'OK', 'transport %s not probed'
                           % url.transport)
        failures = []
        for host in url.hosts:
            connection = kombu.Connection(
                hostname=host.hostname or 'localhost',
                port=host.port or 5672,
                userid=host.username or 'guest',
                password=host.password or 'guest',
                virtual_host=url.virtual_host or '/',
                transport='pyamqp', connect_timeout=BROKER_TIMEOUT)
            try:
                connection.connect()
                return _result(True, 'OK', 'broker %s:%s answers'
                               % (host.hostname, host.port))
            except Exception as exc:
                failures.append('%s:%s %s' % (host.hostname, host.port,
                                              exc))
            finally:
                connection.release()
        return _result(False, 'BROKER UNREACHABLE', '; '.join(failures))


def _transport_url():
    """[DEFAULT] transport_url, registered here when no transport was
    made in this process (the worker's parent makes none)."""
    for group, opts in messaging_opts.list_opts():
        if group is None:
            for opt in opts:
                if opt.name == 'transport_url':
                    CONF.register_opt(opt)
    return CONF.transport_url


class WorkersCheck(pluginbase.HealthcheckBaseExtension):
    """Available while every worker process is running."""

    def healthcheck(self, server_port):
        if _processes is None:
            return _result(True, 'OK', 'no worker processes here')
        alive, wanted = _processes()
        if alive < wanted:
            return _result(False, 'WORKERS DOWN', '%d of %d worker '
                           'processes running' % (alive, wanted))
        return _result(True, 'OK', '%d worker processes' % alive)


def api_application(conf=CONF):
    """GET /healthcheck of the API, configured in [healthcheck]."""
    conf.register_opts(healthcheck_opts.HEALTHCHECK_OPTS, 'healthcheck')
    if not conf.healthcheck.backends:
        conf.set_default('backends', API_BACKENDS, 'healthcheck')
    return healthcheck.Healthcheck(None, conf)


def worker_application():
    """The worker's probe: its own checks, whatever [healthcheck] says
    for the API."""
    private = cfg.ConfigOpts()
    private([], project=None, default_config_files=[])
    private.register_opts(healthcheck_opts.HEALTHCHECK_OPTS, 'healthcheck')
    private.set_override('backends', WORKER_BACKENDS, 'healthcheck')
    private.set_override('detailed', False, 'healthcheck')
    return healthcheck.Healthcheck(None, private)
