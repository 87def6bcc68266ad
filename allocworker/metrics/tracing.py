"""Traces through osprofiler, switched on in ``[profiler]``.

A trace starts where a caller starts one (``osprofiler.profiler.init``
with one of ``[profiler] hmac_keys``, or osprofiler's HTTP headers on the
REST shim) and follows the call: ``rpcapi``'s call (span ``rpc``), the
trace's ids in the wire context (``trace_info``, as Nova carries them),
the worker's answer (span ``call``), each database transaction (span
``transaction``) and, when osprofiler traces SQL, every statement.
Spans go where ``connection_string`` says (``otlp://HOST:PORT`` for an
OpenTelemetry collector). With ``[profiler] enabled`` false every hook
reads one global and returns.
"""

import contextlib

from osprofiler import initializer
from osprofiler import profiler
from osprofiler import web

from allocworker.conf import CONF
from allocworker.conf import profiler as profiler_conf

PROJECT = 'allocworker'
_NOTHING = contextlib.nullcontext()
_on = False

# Registered by their reader, not by allocworker.conf (see conf.profiler).
profiler_conf.register_opts(CONF)


def setup(service, host):
    """Send this process's spans where [profiler] says (after fork: the
    exporters run threads)."""
    global _on
    _on = bool(CONF.profiler.enabled)
    if _on:
        initializer.init_from_conf(conf=CONF, context={}, project=PROJECT,
                                   service=service, host=host)


def enabled():
    return _on


def span(name, **info):
    """A span of the trace running in this thread, if one runs."""
    if not _on or profiler.get() is None:
        return _NOTHING
    return profiler.Trace(name, info=info)


def carry(values):
    """The wire context ``values`` (a dict) with this thread's trace."""
    if _on:
        running = profiler.get()
        if running is not None:
            values['trace_info'] = {
                'hmac_key': running.hmac_key,
                'base_id': running.get_base_id(),
                'parent_id': running.get_id()}
    return values


def resume(values):
    """The wire context without its trace, which goes on in this thread
    when it is signed with one of our keys; any earlier call's trace in
    this (pooled) thread ends here."""
    if not _on:
        return values
    profiler.clean()
    if not isinstance(values, dict) or 'trace_info' not in values:
        return values
    values = dict(values)
    info = values.pop('trace_info')
    keys = (CONF.profiler.hmac_keys or '').split(',')
    if isinstance(info, dict) and info.get('hmac_key') in keys:
        profiler.init(info['hmac_key'], base_id=info.get('base_id'),
                      parent_id=info.get('parent_id'))
    return values


def wsgi(application):
    """``application`` starting traces from osprofiler's HTTP headers."""
    if not _on:
        return application
    return web.WsgiMiddleware(application, hmac_keys=CONF.profiler.hmac_keys,
                              enabled=True)
