"""[profiler]: osprofiler's own options (enabled, hmac_keys,
connection_string, statement tracing...); the sample lists them under the
``osprofiler`` namespace. ``connection_string = otlp://HOST:PORT`` exports
to an OpenTelemetry collector (OTLP over HTTP; needs the ``tracing``
extra).

Not registered by ``allocworker.conf``: osprofiler's options come with
the whole of osprofiler (its notifier drivers, requests: a tenth of a
second), which the commands that never trace should not pay for.
``metrics.tracing``, their reader, registers them."""

from osprofiler import opts as profiler_opts


def register_opts(conf):
    profiler_opts.set_defaults(conf)
