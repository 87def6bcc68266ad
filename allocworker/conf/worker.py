import socket

from oslo_config import cfg

worker_group = cfg.OptGroup(
    'worker', title='RPC worker',
    help='The oslo.messaging RPC server that answers allocation calls.')

# [DEFAULT] host, as every OpenStack service names its host; 0.1.x read it
# from [worker] host, still accepted (with a deprecation warning).
host_opt = cfg.StrOpt(
    'host', default=socket.gethostname(), sample_default='<hostname>',
    deprecated_opts=[cfg.DeprecatedOpt('host', group='worker')],
    help='Name of this worker host; worker process N serves the direct RPC '
         'target "HOST.N" besides the shared topic. Must be unique per '
         'worker command: two hosts of one name would share those targets.')

worker_opts = [
    cfg.StrOpt('topic', default='allocworker',
               help='RPC topic the worker serves and clients call.'),
    cfg.IntOpt('workers', default=1, min=1,
               help='Number of worker processes; each runs its own RPC '
                    'server on the topic. All races are settled in the '
                    'database, so any number is safe.'),
    cfg.IntOpt('max_batch_items', default=1000, min=1,
               help='Largest number of items one call may carry; a larger '
                    'call is refused whole with 400 invalid_request.'),
    cfg.IntOpt('shared_transaction_items', default=250, min=1,
               help='Most items of concurrent independent allocate calls '
                    'one worker process writes in one shared transaction '
                    '(group commit); a call is never split, and a larger '
                    'call runs on its own. Bounds how long one shared '
                    'transaction holds the calls in it.'),
    cfg.IntOpt('idempotency_seconds', default=3600, min=1,
               help='How long an allocate answer is remembered under its '
                    'idempotency_key.'),
    cfg.IntOpt('retry_attempts', default=10, min=1,
               help='Attempts per transaction when concurrent writers '
                    'conflict (provider generation, deadlock); each attempt '
                    'is a fresh transaction. Exhaustion answers 409 '
                    'provider.concurrent_update.'),
    cfg.FloatOpt('retry_max_wait', default=0.2, min=0,
                 help='Upper bound, in seconds, of the random back-off '
                      'between concurrent-update retries.'),
    cfg.FloatOpt('retry_unavailable_seconds', default=30, min=0,
                 help='How long a write transaction is tried again, with '
                      'exponential back-off (at most 2 s apart), while the '
                      'database is unavailable: connection lost (MySQL '
                      '2006, 2013), a Galera node not ready or outside the '
                      'Primary Component (1047), a COMMIT it could not '
                      'replicate (1180). Cover your failover time (HAProxy '
                      'moving to a backup node: about 3-10 s); keep it '
                      'below the callers\' RPC timeout. After that the '
                      'item answers 500, and while the database stays '
                      'unavailable later transactions try only once.'),
    cfg.IntOpt('upkeep_interval', default=60, min=1,
               help='Seconds between runs of the worker task that expires '
                    'events and prunes old generation counter rows.'),
    cfg.IntOpt('publish_retries', default=1, min=0,
               help='Clients of allocworker.rpcapi: how many times a '
                    'call whose publish failed is published again on a '
                    'fresh connection (the next broker of transport_url) '
                    'before it raises MessageDeliveryFailure (or kombu\'s '
                    'OperationalError when no connection could be made). '
                    'With 0 a connection never leaves a hung broker, not '
                    'even in its heartbeat thread. Each try '
                    'waits for the broker at most the smaller of the call '
                    'timeout and [oslo_messaging_rabbit] '
                    'heartbeat_timeout_threshold; oslo.messaging\'s own '
                    'default, retrying for ever, holds a call long past '
                    'its timeout while a broker node hangs.'),
    cfg.FloatOpt('call_grace', default=1.0, min=0,
                 help='Clients of allocworker.rpcapi: seconds a caller '
                      'waits beyond a call\'s timeout before it gives up '
                      'with MessagingTimeout, whatever oslo.messaging is '
                      'still doing (connecting to, publishing to or '
                      'waiting for a hung broker node). The abandoned '
                      'call finishes, or fails, in the background.'),
    cfg.IntOpt('shutdown_timeout', default=60, min=1,
               help='Seconds a worker process waits for in-flight calls '
                    'after SIGTERM before it exits anyway.'),
]


def register_opts(conf):
    conf.register_opt(host_opt)
    conf.register_group(worker_group)
    conf.register_opts(worker_opts, group=worker_group)


def list_opts():
    return {'DEFAULT': [host_opt], worker_group: worker_opts}
