from oslo_config import cfg

api_group = cfg.OptGroup(
    'api', title='REST shim',
    help='The optional Placement-compatible HTTP API.')

api_opts = [
    cfg.HostAddressOpt('host', default='127.0.0.1',
                       help='Address allocworker-api listens on.'),
    cfg.PortOpt('port', default=8778,
                help='Port allocworker-api listens on.'),
    cfg.StrOpt('auth_strategy', default='keystone',
               choices=[('keystone', 'keystonemiddleware auth_token; '
                         'configure [keystone_authtoken]'),
                        ('noauth2', 'development only: x-auth-token: '
                         'USER[:PROJECT], "admin" is an admin')],
               help='How allocworker-api authenticates callers.'),
    cfg.IntOpt('threads', default=16, min=1,
               help='Requests allocworker-api serves at once.'),
    cfg.BoolOpt('randomize_allocation_candidates', default=False,
                help='Return allocation candidates starting from a random '
                     'root provider and in shuffled order, so that '
                     'schedulers asking with a limit do not all see the '
                     'same first hosts (like Placement\'s [placement] '
                     'randomize_allocation_candidates). When False, '
                     'candidates come in the order their root providers '
                     'were created.'),
    cfg.BoolOpt('stale_reads', default=False,
                help='Serve GET /allocation_candidates and the provider '
                     'lists of GET /resource_providers from [database] '
                     'slave_connection (a replica, or Galera\'s backup '
                     'nodes), which may be a moment behind the writer. '
                     'A claim or allocation is still judged on the '
                     'writer, so a stale candidate can only be refused '
                     '(409), never overcommit. Listings and usages '
                     '(list_allocations, list_consumers, get_usages) use '
                     'slave_connection whenever it is set.'),
]


def register_opts(conf):
    conf.register_group(api_group)
    conf.register_opts(api_opts, group=api_group)


def list_opts():
    return {api_group: api_opts}
