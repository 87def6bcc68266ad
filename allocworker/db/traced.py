"""Database work in traces (``allocworker.metrics.tracing``): a span per
transaction and, with ``[profiler] trace_sqlalchemy``, per statement.

Only for processes that trace (``api.configure(conf, trace=True)``):
``metrics.tracing`` has registered ``[profiler]`` there."""

from osprofiler import profiler
from osprofiler import sqlalchemy as profiler_sqlalchemy
import sqlalchemy as sa

from allocworker.conf import CONF


def engine(traced):
    """Trace ``traced``'s transactions and statements. Costs nothing
    for calls that carry no trace."""
    if CONF.profiler.trace_sqlalchemy:
        profiler_sqlalchemy.add_tracing(sa, traced, 'db')
    sa.event.listen(traced, 'begin', _begin)
    sa.event.listen(traced, 'commit', _end)
    sa.event.listen(traced, 'rollback', _end)


def _begin(conn):
    running = profiler.get()
    if running is not None:
        running.start('transaction', info={'backend': conn.dialect.name})
        conn.info['allocworker.traced'] = running


def _end(conn):
    # Only a transaction whose begin was traced ends a span: a trace may
    # start or end while a connection is in a transaction.
    if conn.info.pop('allocworker.traced', None) is profiler.get() and \
            profiler.get() is not None:
        profiler.get().stop()
