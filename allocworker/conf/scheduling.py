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
                    'number (and, for a request whose filters admit only '
                    'some hosts, how many they admit), not the size of '
                    'the cloud. Larger windows weigh more hosts per claim '
                    'at more cost.'),
    cfg.IntOpt('shared_claim_items', default=32, min=1, max=48,
               help='Most items of concurrent claim calls (not atomic) one '
                    'worker process places in one shared transaction, '
                    'with one search for the items that ask the same; a '
                    'call is never split, and a larger call runs on its '
                    'own, each item in a transaction of its own. Bounds '
                    'how long one shared transaction holds the providers '
                    'it placed on. At most 48: on PostgreSQL each claim '
                    'placed is a subtransaction, and a transaction of '
                    'more than 64 makes every session\'s snapshots '
                    'costlier.'),
    cfg.BoolOpt('keep_group_state', default=True,
                help='Keep each group\'s members, and roots\' domains, '
                     'between transactions, while the tokens read with a '
                     'group\'s lock say they have not changed, instead of '
                     'reading them for every write into the group. Set '
                     'false while workers of a release before this one '
                     'write to the same database: they change members '
                     'and aggregates without moving those tokens. Every '
                     'worker writes the tokens either way.'),
]


def register_opts(conf):
    conf.register_group(scheduling_group)
    conf.register_opts(scheduling_opts, group=scheduling_group)


def list_opts():
    return {scheduling_group: scheduling_opts}
