"""Project limits judged inside an allocation transaction.

``start`` runs first in the transaction and locks nothing: it picks the
judged requests and reads the limits (a process's first read waits for
Keystone, before any lock is held). The projects are locked and their
usage read only when the first item reaches its limits, after its
capacity and group rules, or, for an allocate on PostgreSQL, with the
providers' capacity state in its round trip (``capacity_state``): by
then the transaction holds its consumers, groups and providers, so the
project locks come last in the global lock order and are held only for
the judging, the write and the commit (a writer of a busy project no
longer queues for its whole transaction; ``db.quota``, project_id order;
one statement reads the usage counters, kept by every write, whatever the
projects' size). A concurrent writer
of the same project has then either committed (and is counted) or
waits. Each item is judged against the usage the items before it in the
transaction left (``judge``), or, in an atomic batch, on the combined
result (``judge_combined``). A claim's try whose candidate fails on
capacity never locks a project.

Requests of a context marked with ``exempt`` (the REST shim's Placement
API unless ``[quota] enforce_placement_api``) are neither locked for nor
judged; an empty allocation (a delete) never grows anything and takes no
lock either.
"""

import collections

from allocworker import codes
from allocworker.conf import CONF
from allocworker.db.limits import quota as db_quota
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


def start(conn, requests, origin_of):
    """The Judgement of ``requests`` (each under the context of
    ``origin_of(request)``, an Origin), or None when limits are off or
    none of the requests is judged."""
    source = limit_source.source()
    if source is None:
        return None
    chosen, projects, most = set(), set(), {}
    for r in requests:
        if not r.allocations:
            continue
        if judged(origin_of(r).context):
            chosen.add(r.index)
            projects.add(r.project_id)
        _add_most(most, r)
    if not chosen:
        return None
    try:
        known = source.current()
        failure = None
    except limit_source.Unavailable as exc:
        known, failure = None, str(exc)
    return Judgement(conn, origin_of, chosen,
                     {p: known.of(p) if known else None for p in projects},
                     frozenset(CONF.quota.counted_consumer_types), failure,
                     most)


def _add_most(most, request):
    """Grow ``most`` ({project_id: {resource: amount}}, the most the
    transaction's items can grow each project's usage by) by what
    ``request`` could add, whatever its consumer's type and what it held
    (every class counted, a new server)."""
    grown = most.get(request.project_id)
    if grown is None:
        grown = most[request.project_id] = {}
    grown[rule.SERVERS] = grown.get(rule.SERVERS, 0) + 1
    for resources in request.allocations.values():
        for name, amount in resources.items():
            resource = rule.CLASS_PREFIX + name
            grown[resource] = grown.get(resource, 0) + amount


def _add(usage, delta):
    for resource, amount in delta.items():
        usage[resource] = usage.get(resource, 0) + amount


class Judgement(object):
    """The limits and running usage of the projects of one transaction.

    Runs once per judged item: plain dicts, and an item's name in the
    call (``items[N]``) is made only for a refusal."""

    def __init__(self, conn, origin_of, chosen, limits, counted,
                 failure=None, most=None):
        self.conn = conn
        self.origin_of = origin_of
        self.chosen = chosen
        self.limits = limits
        self.counted = counted
        self.failure = failure
        self._most = most
        self._usage = None
        self._before_read = []
        # Projects judged item by item (all until the usage is read).
        self._near = set(limits)

    @property
    def usage(self):
        """{project: {resource: used}}, read under the projects' locks,
        taken at the first judgement."""
        self._read()
        return self._usage

    def _read(self):
        if self._usage is None:
            self._took(db_quota.locked_usage(
                self.conn, self.limits, self.counted, rule.SERVERS_TYPE))

    def capacity_state(self, provider_ids):
        """The locked providers' ``capacity_state``, the projects locked
        and their usage read in the same round trip where the database
        allows (PostgreSQL): the project locks are then taken before the
        capacity rules are judged, still last in the lock order."""
        state, usage = db_quota.capacity_and_locked_usage(
            self.conn, provider_ids, self.limits, self.counted,
            rule.SERVERS_TYPE)
        if usage is not None:
            self._took(usage)
        return state

    def _took(self, usage):
        self._usage = usage
        for deltas in self._before_read:
            self._count(deltas)
        if self._most is not None:
            self._near = {p for p, limits in self.limits.items()
                          if limits is None or not rule.within(
                              limits, usage[p], self._most.get(p, {}))}

    def _passes(self, request, consumer):
        """True if the item moves the usage of no project judged item by
        item: it cannot be refused, and what it moves counts for nobody
        (known once the usage is read, at the first item judged)."""
        if request.index in self.chosen:
            self._read()
        return (self._usage is not None and
                request.project_id not in self._near and
                (consumer is None or consumer.project_id not in self._near))

    def _count(self, deltas):
        """Move the running usage by an accepted item's ``deltas`` (kept
        until the usage is read when it is not yet)."""
        if self._usage is None:
            self._before_read.append(deltas)
            return
        for project_id, delta in deltas.items():
            if project_id in self._usage:
                _add(self._usage[project_id], delta)

    def _deltas(self, request, consumer, old_rows, new_rows):
        """{project_id: {resource: amount}} the request moves usage by."""
        kind = request.consumer_type or (
            consumer.consumer_type if consumer else
            self.origin_of(request).new_type)
        deltas = {request.project_id: rule.counted(kind, new_rows,
                                                   self.counted)}
        if consumer is None:
            return deltas
        released = rule.counted(consumer.consumer_type, old_rows,
                                self.counted)
        _add(deltas.setdefault(consumer.project_id, {}),
             {resource: -amount for resource, amount in released.items()})
        return deltas

    def _at(self, request):
        return 'items[%d]' % self.origin_of(request).index

    def judge(self, request, consumer, old_rows, new_rows):
        """The item's Fault, or None (its usage is then counted for the
        items after it)."""
        if self._passes(request, consumer):
            return None
        deltas = self._deltas(request, consumer, old_rows, new_rows)
        if request.index not in self.chosen:
            # Not judged (it empties a consumer, or its caller is
            # exempt), but what it moves counts for the items after it.
            self._count(deltas)
            return None
        project = request.project_id
        fault = self._fault(request, project,
                            self.usage.get(project, {}), deltas[project])
        if fault is None:
            self._count(deltas)
        return fault

    def _fault(self, request, project, usage, delta):
        limits = self.limits.get(project)
        if limits is None:
            if any(amount > 0 for amount in delta.values()):
                return unavailable(self._at(request), project, self.failure)
            return None
        refused = rule.refusal(limits, usage, delta)
        return refused and exceeded(self._at(request), project, refused)

    def judge_combined(self, items):
        """{index: Fault} of an atomic batch: ``items`` are (request,
        consumer, old_rows, new_rows); a limit the combined result grows
        past refuses every item that grows it."""
        self._read()
        if not self._near:
            return {}
        deltas = {}
        total = collections.defaultdict(dict)
        for request, consumer, old_rows, new_rows in items:
            deltas[request.index] = self._deltas(request, consumer,
                                                 old_rows, new_rows)
            for project_id, delta in deltas[request.index].items():
                _add(total[project_id], delta)
        faults = {}
        for request, *_rest in items:
            if request.index not in self.chosen:
                continue
            project = request.project_id
            mine = deltas[request.index][project]
            usage = self.usage.get(project, {})
            limits = self.limits.get(project)
            if limits is None:
                fault = self._fault(request, project, usage, mine)
            else:
                after = dict(usage)
                _add(after, total[project])
                broken = rule.over(limits, usage, after)
                fault = next((exceeded(self._at(request), project,
                                       rule.Refusal(
                                           resource, limits[resource],
                                           usage.get(resource, 0),
                                           mine[resource]))
                              for resource in sorted(broken)
                              if mine.get(resource, 0) > 0), None)
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
