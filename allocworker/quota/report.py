"""``get_limits`` (RPC 1.4): a project's limits beside what it uses.

Read in one snapshot; the limits are this process's (``limits``), so the
answer agrees with how this worker judges writes right now.
"""

from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db.limits import quota as db_quota
from allocworker import policy
from allocworker.quota import limits as limit_source
from allocworker.quota import rule
from allocworker import validation


def get_limits(context, project_id):
    """One item per limited resource of the project, by resource name:
    ``{"resource", "limit", "usage", "remaining", "status": 200}``; none
    when limits are off (``[quota] driver = noop``)."""
    validation.string(project_id, 'project_id')
    policy.check(context, 'get_limits', 'limits of project %s' % project_id,
                 project_id)
    source = limit_source.source()
    if source is None:
        return []
    try:
        limits = source.current().of(project_id)
    except limit_source.Unavailable as exc:
        raise codes.Fault(codes.INTERNAL_ERROR,
                          'the limits of project %s cannot be read: %s'
                          % (project_id, exc))
    with db.snapshot() as conn:
        usage = db_quota.usage(
            conn, [project_id], CONF.quota.counted_consumer_types,
            rule.SERVERS_TYPE)[project_id]
    return [{'resource': resource, 'limit': limit,
             'usage': usage.get(resource, 0),
             'remaining': max(0, limit - usage.get(resource, 0)),
             'status': 200}
            for resource, limit in sorted(limits.items())]
