"""What a project's consumers hold, summed by consumer type (Placement's
``GET /usages``)."""

from allocworker import bindings
from allocworker.db import api as db
from allocworker.db.ledger import allocations as db_allocations
from allocworker import policy
from allocworker import validation


def by_project(context, project_id, user_id=None):
    """[{"consumer_type", "consumer_count", "usages": {class: used}}], one
    entry per consumer type (None: consumers written without a type)."""
    validation.string(project_id, 'project_id')
    if user_id is not None:
        validation.string(user_id, 'user_id')
    policy.check(context, 'project_usages', 'usages of project %s'
                 % project_id, project_id)
    with db.reader() as conn:
        found = db_allocations.project_usage(conn, project_id, user_id,
                                             bindings.seen(context))
    return [{'consumer_type': kind, 'consumer_count': count,
             'usages': used}
            for kind, (used, count) in sorted(
                found.items(), key=lambda kv: kv[0] or '')]
