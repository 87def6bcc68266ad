from oslo_config import cfg

api_group = cfg.OptGroup(
    'api', title='REST shim',
    help='The optional Placement-compatible HTTP API.')

api_opts = [
    cfg.HostAddressOpt('host', default='127.0.0.1',
                       help='Address allocworker-api listens on.'),
    cfg.PortOpt('port', default=8778,
                help='Port allocworker-api listens on.'),
]


def register_opts(conf):
    conf.register_group(api_group)
    conf.register_opts(api_opts, group=api_group)


def list_opts():
    return {api_group: api_opts}
