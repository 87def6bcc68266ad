from oslo_config import cfg

metrics_group = cfg.OptGroup(
    'metrics', title='Prometheus metrics and the health probe',
    help='Each service (allocworker-worker with all its processes, '
         'allocworker-api) serves /metrics and /healthcheck on one port '
         'of its own.')

metrics_opts = [
    cfg.HostAddressOpt('host', default='127.0.0.1',
                       help='Address the metrics endpoint listens on.'),
    cfg.PortOpt('port', default=0,
                help='Port of this service\'s metrics endpoint (GET '
                     '/metrics for Prometheus, GET /healthcheck for '
                     'supervisors and load balancers); 0 turns metrics '
                     'and the endpoint off and costs nothing. The worker '
                     'and the API read the same option: give each its '
                     'own configuration file or port.'),
    cfg.BoolOpt('per_provider', default=False,
                help='Also export capacity, used and reserved per '
                     'provider and resource class (one series per '
                     'inventory row: mind the cardinality on large '
                     'clouds). The sums over the cloud are always '
                     'exported.'),
    cfg.StrOpt('directory',
               help='Where the processes of this service keep their '
                    'metric files (prometheus_client\'s multiprocess '
                    'mode); must not be shared with another service. '
                    'Files of processes no longer running are removed '
                    'when the service starts. Unset: '
                    'TMPDIR/allocworker-SERVICE-metrics-PORT (SERVICE '
                    'worker or api), removed when allocworker-worker or '
                    'allocworker-api stops cleanly.'),
]


def register_opts(conf):
    conf.register_group(metrics_group)
    conf.register_opts(metrics_opts, group=metrics_group)


def list_opts():
    return {metrics_group: metrics_opts}
