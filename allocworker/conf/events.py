from oslo_config import cfg

events_group = cfg.OptGroup(
    'events', title='External events',
    help='Events that agents push about consumers.')

DEFAULT_NAMES = [
    'network-changed', 'network-vif-plugged', 'network-vif-unplugged',
    'network-vif-deleted', 'volume-extended', 'power-update',
    'accelerator-request-bound', 'volume-reimaged',
]

events_opts = [
    cfg.IntOpt('hold_seconds', default=300, min=0,
               help='How long an event for a consumer that does not exist '
                    'yet is held; it counts as arrived if the consumer '
                    'appears within this window.'),
    cfg.IntOpt('retention_seconds', default=86400, min=1,
               help='Stored events older than this are removed.'),
    cfg.ListOpt('allowed_names', default=DEFAULT_NAMES,
                help='Event names agents may send.'),
    cfg.IntOpt('max_wait_seconds', default=50, min=1,
               help='Longest wait_for_events call; a longer timeout is '
                    'cut to this, and to 5 seconds below [DEFAULT] '
                    'rpc_response_timeout, so a waiter always gets an '
                    'answer before its RPC call times out.'),
    cfg.FloatOpt('poll_seconds', default=0.1, min=0.05, max=5,
                 help='How often each worker process looks for events '
                      'stored (by any process) for the wait_for_events '
                      'calls it has parked: one statement per look for '
                      'all of them, however many. A parked call holds no '
                      'thread; an event wakes its waiter within about '
                      'this long.'),
]


def register_opts(conf):
    conf.register_group(events_group)
    conf.register_opts(events_opts, group=events_group)


def list_opts():
    return {events_group: events_opts}
