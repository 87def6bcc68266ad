"""Project limits judged inside an allocation transaction.

``start`` runs first in the transaction: it locks the row of every project
that the transaction's judged requests write for (``db.quota``, project_id
order, before consumers, groups and providers), then reads those
projects' usage counters (kept by every write, ``db.quota``; one
statement whatever the projects' size), so a concurrent writer of the
same project has either committed (and is counted) or waits. Each
item is then judged after its capacity and group rules against the
usage the items before it in the transaction left (``judge``), or, in
an atomic batch, on the combined result (``judge_combined``).

Requests of a context marked with ``exempt`` (the REST shim's Placement
API unless ``[quota] enforce_placement_api``) are neither locked for nor
judged; an empty allocation (a delete) never grows anything and takes no
lock either.
"""

import collections

from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import quota as db_quota
from allocworker.quota import limits as limit_source
from allocworker.quota import rule

_EXEMPT = '_allocworker_limits_exempt'


def exempt(context):
    """Leave ``context``'s writes out of the limits (and of their locks)."""
    setattr(context, _EXEMPT, True)
    return context


def placement_api(context):
    """``context`` of a REST shim request: exempt from the limits unless
    ``[quota] enforce_placement_api`` (a Placement client does not expect
    a 403 from Placement)."""
    if not CONF.quota.enforce_placement_api:
        exempt(context)
    return context


def judged(context):
    return not getattr(context, _EXEMPT, False)


def lock(conn, requests_and_contexts):
    """Take the project locks for ``[(request, context)]`` (a claim takes
    them before its consumers, as an allocate does); None when limits
    are off, else the projects locked."""
    if limit_source.source() is None:
        return None
    projects = {r.project_id for r, context in requests_and_contexts
                if judged(context)}
    db_quota.lock_projects(conn, projects)
    return projects


def start(conn, requests, origin_of):
    """The Judgement of ``requests`` (each under the context of
    ``origin_of(request)``), or None when limits are off or none of the
    requests is judged."""
    source = limit_source.source()
    if source is None:
        return None
    chosen = {r.index for r in requests
              if r.allocations and judged(origin_of(r).context)}
    if not chosen:
        return None
    projects = {r.project_id for r in requests if r.index in chosen}
    # The limits first: a process's first read waits for Keystone, and
    # must not hold the projects' locks meanwhile.
    try:
        known = source.current()
        failure = None
    except limit_source.Unavailable as exc:
        known, failure = None, str(exc)
    db_quota.lock_projects(conn, projects)
    counted = frozenset(CONF.quota.counted_consumer_types)
    usage = db_quota.usage(conn, projects, counted, rule.SERVERS_TYPE)
    return Judgement(chosen, {p: known.of(p) if known else None
                              for p in projects}, usage, counted, failure)


class Judgement(object):
    """The limits and running usage of the projects of one transaction."""

    def __init__(self, chosen, limits, usage, counted, failure=None):
        self.chosen = chosen
        self.limits = limits
        self.usage = {p: collections.Counter(u) for p, u in usage.items()}
        self.counted = counted
        self.failure = failure

    def _deltas(self, request, consumer, old_rows, new_rows, new_type):
        """{project_id: Counter} the request moves usage by."""
        kind = request.consumer_type or (
            consumer.consumer_type if consumer else new_type)
        deltas = collections.defaultdict(collections.Counter)
        deltas[request.project_id].update(
            rule.counted(kind, new_rows, self.counted))
        if consumer is not None:
            deltas[consumer.project_id].subtract(rule.counted(
                consumer.consumer_type, old_rows, self.counted))
        return deltas

    def judge(self, request, at, consumer, old_rows, new_rows, new_type):
        """The item's Fault, or None (its usage is then counted for the
        items after it)."""
        if request.index not in self.chosen:
            return None
        deltas = self._deltas(request, consumer, old_rows, new_rows,
                              new_type)
        project = request.project_id
        fault = self._fault(at, project, self.usage.get(project, {}),
                            deltas[project])
        if fault is None:
            for project_id, delta in deltas.items():
                if project_id in self.usage:
                    self.usage[project_id].update(delta)
        return fault

    def _fault(self, at, project, usage, delta):
        limits = self.limits.get(project)
        if limits is None:
            if any(amount > 0 for amount in delta.values()):
                return unavailable(at, project, self.failure)
            return None
        refused = rule.refusal(limits, usage, delta)
        return refused and exceeded(at, project, refused)

    def judge_combined(self, items):
        """{index: Fault} of an atomic batch: ``items`` are (request, at,
        consumer, old_rows, new_rows, new_type); a limit the combined
        result grows past refuses every item that grows it."""
        deltas = {}
        total = collections.defaultdict(collections.Counter)
        for item in items:
            request = item[0]
            if request.index not in self.chosen:
                continue
            deltas[request.index] = self._deltas(*item[:1] + item[2:])
            for project_id, delta in deltas[request.index].items():
                total[project_id].update(delta)
        faults = {}
        for request, at, *_rest in items:
            if request.index not in deltas:
                continue
            project = request.project_id
            mine = deltas[request.index][project]
            usage = self.usage.get(project, {})
            limits = self.limits.get(project)
            if limits is None:
                fault = self._fault(at, project, usage, mine)
            else:
                after = collections.Counter(usage)
                after.update(total[project])
                broken = rule.over(limits, usage, after)
                fault = next((exceeded(at, project, rule.Refusal(
                    resource, limits[resource], usage.get(resource, 0),
                    mine[resource])) for resource in sorted(broken)
                    if mine[resource] > 0), None)
            if fault is not None:
                faults[request.index] = fault
        return faults


def exceeded(at, project, refused):
    return codes.Fault(
        codes.QUOTA_EXCEEDED,
        '%s: project %s is limited to %d %s; it uses %d and the item '
        'requests %d more' % (at, project, refused.limit, refused.resource,
                              refused.usage, refused.request))


def unavailable(at, project, failure):
    return codes.Fault(
        codes.INTERNAL_ERROR,
        '%s: the limits of project %s cannot be judged, nothing was '
        'written: %s' % (at, project, failure))
