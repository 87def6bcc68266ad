"""[profiler]: osprofiler's own options (enabled, hmac_keys,
connection_string, statement tracing...), registered here so every
command knows them; the sample lists them under the ``osprofiler``
namespace. ``connection_string = otlp://HOST:PORT`` exports to an
OpenTelemetry collector (OTLP over HTTP; needs the ``tracing`` extra)."""

from osprofiler import opts as profiler_opts


def register_opts(conf):
    profiler_opts.set_defaults(conf)
