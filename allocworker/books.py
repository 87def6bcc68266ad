"""The audit of the books: every invariant of design §2 checked against
the database, each breach reported with its rows."""

import datetime

from oslo_utils import timeutils

from allocworker.db import api as db
from allocworker.db.ledger import books as db_books
from allocworker.db.limits import project_counters
from allocworker.db.search import rooms as db_rooms
from allocworker.groups import report as groups


def check(grace_seconds=0):
    """[{"invariant", "rows"}] for every invariant with breaches.

    Held events are removed by the workers' upkeep task every
    ``[worker] upkeep_interval``; ``grace_seconds`` lets one run be late.
    """
    now = timeutils.utcnow()
    with db.reader() as conn:
        found = [
            ('usage over capacity without a forced inventory change',
             db_books.over_capacity(conn)),
            ('usage counter differs from the allocations',
             db_books.usage_counters_off(conn)),
            ('room left differs from capacity and usage, or is missing',
             db_books.free_counters_off(conn)),
            ('project usage counter differs from the allocations',
             db_books.project_counters_off(conn)),
            ('allocation on a class the provider has no inventory of',
             db_books.allocations_without_inventory(conn)),
            ('consumer without allocations',
             db_books.consumers_without_allocations(conn)),
            ('allocation whose consumer is missing',
             db_books.allocations_without_consumer(conn)),
            ('held event past its window',
             db_books.held_events_past_window(
                 conn, now - _seconds(grace_seconds))),
            ('consumer with allocations in two partitions (shared aside)',
             db_books.consumers_across_partitions(conn)),
            ('provider in another partition than its root',
             db_books.trees_across_partitions(conn)),
        ]
    found.append(('hard group rule broken', groups.broken_rules()))
    return [{'invariant': name, 'rows': rows} for name, rows in found if rows]


def _seconds(n):
    return datetime.timedelta(seconds=n)


def refresh_room():
    """The room left of every usage counter set again from inventories
    and usage; the number of counters corrected."""
    with db.writer() as conn:
        return db_rooms.refresh(conn)


def refresh_projects():
    """The project usage counters corrected from the allocations (after
    a rolling upgrade from a release whose workers keep none); the
    number of counters corrected. Safe while this release's workers
    write (``db.project_counters.refresh``)."""
    with db.writer() as conn:
        return project_counters.refresh(conn)
