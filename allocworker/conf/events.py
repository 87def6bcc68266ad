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
    cfg.IntOpt('wait_threads', default=64, min=1,
               help='Threads per worker process that serve '
                    'wait_for_events calls, apart from the RPC executor '
                    'pool ([DEFAULT] executor_thread_pool_size), so '
                    'waiters never hold back writes. More waiters than '
                    'this queue until a thread is free (their timeout '
                    'runs from when one is).'),
]


def register_opts(conf):
    conf.register_group(events_group)
    conf.register_opts(events_opts, group=events_group)


def list_opts():
    return {events_group: events_opts}
