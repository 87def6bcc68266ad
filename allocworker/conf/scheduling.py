from oslo_config import cfg

scheduling_group = cfg.OptGroup(
    'scheduling', title='Claims',
    help='How a claim (RPC 1.3) chooses where a consumer goes.')

scheduling_opts = [
    cfg.IntOpt('window_size', default=8, min=1, max=1000,
               help='Providers read per requested class for each window of '
                    'roots a claim weighs: the roots of the providers with '
                    'the most room (spread) or the least room that still '
                    'fits (pack). A claim tries the candidates of one '
                    'window, best first, and reads the next window only '
                    'when none of them fits, so its cost follows this '
                    'number, not the size of the cloud. Larger windows '
                    'weigh more hosts per claim at more cost.'),
]


def register_opts(conf):
    conf.register_group(scheduling_group)
    conf.register_opts(scheduling_opts, group=scheduling_group)


def list_opts():
    return {scheduling_group: scheduling_opts}
