"""What monitoring reads from the database: the books as gauges (one
statement per scrape, from the usage counters) and a liveness ping.

Monitoring runs beside the service (the worker's parent process, the
API's metrics thread), so it gets an engine of its own without a pool:
no connection is held between scrapes or inherited by forked children,
and every probe proves that a new connection can be made.
"""

import collections
import threading

import sqlalchemy as sa

from allocworker.db import schema

Book = collections.namedtuple(
    'Book', ['resource_class', 'partition', 'provider_uuid',
             'provider_name', 'capacity', 'used', 'reserved'])

_i = schema.inventories
_u = schema.usages
_p = schema.providers
_rc = schema.resource_classes

# Seconds a probe waits for the server to accept a connection.
CONNECT_TIMEOUT = 5

_engines = {}
_lock = threading.Lock()


def _engine(url):
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            backend = sa.engine.make_url(url).get_backend_name()
            connect_args = ({} if backend == 'sqlite'
                            else {'connect_timeout': CONNECT_TIMEOUT})
            engine = _engines[url] = sa.create_engine(
                url, poolclass=sa.pool.NullPool, connect_args=connect_args)
        return engine


def ping(url):
    """Raise unless the database at ``url`` answers a statement."""
    with _engine(url).connect() as conn:
        conn.exec_driver_sql('SELECT 1').scalar()


def books(url, per_provider):
    """[Book] in one statement: per resource class and partition (provider
    fields None), or per provider and class."""
    capacity = (_i.c.total - _i.c.reserved) * _i.c.allocation_ratio
    used = sa.func.coalesce(_u.c.used, 0)
    joined = (_i.join(_rc, _rc.c.id == _i.c.resource_class_id)
              .join(_p, _p.c.id == _i.c.provider_id)
              .outerjoin(_u, sa.and_(
                  _u.c.provider_id == _i.c.provider_id,
                  _u.c.resource_class_id == _i.c.resource_class_id)))
    if per_provider:
        query = (sa.select(_rc.c.name, _p.c.partition, _p.c.uuid,
                           _p.c.name, capacity, used, _i.c.reserved)
                 .select_from(joined))
    else:
        query = (sa.select(_rc.c.name, _p.c.partition, sa.null(),
                           sa.null(), sa.func.sum(capacity),
                           sa.func.sum(used), sa.func.sum(_i.c.reserved))
                 .select_from(joined)
                 .group_by(_rc.c.name, _p.c.partition))
    with _engine(url).connect() as conn:
        return [Book(row[0], row[1], row[2], row[3], float(row[4] or 0),
                     float(row[5] or 0), float(row[6] or 0))
                for row in conn.execute(query)]
