"""oslo.messaging's own options that allocworker reads itself.

Not registered by ``allocworker.conf``: finding them imports the whole of
oslo.messaging (a quarter of a second), which the commands that never
touch RPC should not pay for. ``events.waits``, their reader, registers
them.
"""

from oslo_messaging import opts as messaging_opts


def _rpc_response_timeout():
    """oslo.messaging's ``[DEFAULT] rpc_response_timeout``, which caps
    waits (``[events] max_wait_seconds``). oslo.messaging registers it
    only in a process that makes an RPC client, which a worker does not:
    unregistered, a worker's configured value was never read and the cap
    was always 55 s."""
    for group, opts in messaging_opts.list_opts():
        for opt in opts if group is None else ():
            if opt.name == 'rpc_response_timeout':
                return opt
    raise LookupError('oslo.messaging has no rpc_response_timeout')


def register_opts(conf):
    conf.register_opt(_rpc_response_timeout())
