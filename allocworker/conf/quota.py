from oslo_config import cfg

quota_group = cfg.OptGroup(
    'quota', title='Project limits',
    help="Keystone's unified limits, enforced inside the allocation "
         'transaction (design §3 "Project limits").')

quota_opts = [
    cfg.StrOpt('driver', default='noop',
               choices=[('noop', 'No limits: nothing is judged or locked.'),
                        ('unified_limits',
                         "Keystone's registered and project limits, read "
                         'through oslo.limit (its [oslo_limit] section).')],
               help='Where project limits come from.'),
    cfg.IntOpt('refresh_seconds', default=60, min=1,
               help='Each worker process keeps the limits it read from '
                    'Keystone this long, then reads them again; a limit '
                    'changed in Keystone takes effect within this time.'),
    cfg.IntOpt('stale_seconds', default=600, min=0,
               help='While Keystone cannot be reached, the limits last '
                    'read keep holding for this long after they should '
                    'have been refreshed; past it, writes that would grow '
                    "a project's usage answer 500 internal_error (and "
                    'write nothing) until Keystone answers again. Writes '
                    'that grow nothing are never held back.'),
    cfg.ListOpt('counted_consumer_types', default=['INSTANCE'],
                help="Consumer types whose allocations count against "
                     "their project's class:<resource class> limits "
                     '(servers always counts INSTANCE consumers).'),
    cfg.BoolOpt('enforce_placement_api', default=False,
                help="Judge writes of the REST shim's Placement API "
                     '(PUT/POST /allocations) against project limits too. '
                     'Off by default: a Placement client does not expect '
                     'a 403 from Placement.'),
]


def register_opts(conf):
    conf.register_group(quota_group)
    conf.register_opts(quota_opts, group=quota_group)


def list_opts():
    return {quota_group: quota_opts}
