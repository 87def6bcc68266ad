from oslo_config import cfg

partitions_group = cfg.OptGroup(
    'partitions', title='Partitions',
    help='Several deployments (regions, edge sites) served by one '
         'allocworker, each in a partition of its own (RPC 1.6).')

partitions_opts = [
    cfg.DictOpt('bindings', default={},
                help='Service users bound to a partition, as '
                     '``user_id:partition,...``: a bound caller (over RPC '
                     'or the REST shim), whatever its roles, sees and '
                     'writes only its partition and ``shared``; the '
                     'providers it creates land in its partition. Callers '
                     'not listed see every partition. Each deployment\'s '
                     'Nova and Neutron reach allocworker through their '
                     'own service user, bound to their own partition.'),
]


def register_opts(conf):
    conf.register_group(partitions_group)
    conf.register_opts(partitions_opts, group=partitions_group)


def list_opts():
    return {partitions_group: partitions_opts}
