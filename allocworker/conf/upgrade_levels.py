from oslo_config import cfg

upgrade_group = cfg.OptGroup(
    'upgrade_levels', title='RPC version caps',
    help='Caps on the RPC versions clients send, for rolling upgrades.')

upgrade_opts = [
    cfg.StrOpt('allocworker',
               help='Highest allocworker RPC API version clients may send, '
                    'for example "1.0" while old workers still run.'),
]


def register_opts(conf):
    conf.register_group(upgrade_group)
    conf.register_opts(upgrade_opts, group=upgrade_group)


def list_opts():
    return {upgrade_group: upgrade_opts}
