"""One allocation transaction: its reads, its judgement and its writes.

The plan locks the consumer rows, then the groups, then the provider rows
(each in a global order), reads inventories and usages only after the
locks are held, and judges the partitions of each item's providers (read
with their locks), then the capacity, unit and group rules on the state
it would commit, then project limits (their locks last, taken by
the first item that reaches them). It writes (``plan_writes``) with
set-based statements: consumers created, updated (compare-and-swap on
the generation, which counts up by one) or deleted with their
generation retired, allocation rows replaced, usage counters moved (per
provider, and per project whatever the limits driver), held events
released, and the generation of every provider it places allocations on
moved by one.
"""

import collections

from allocworker.allocations import plan_writes
from allocworker import bindings
from allocworker import capacity
from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db.catalog import provider_ids
from allocworker.db.catalog import providers as db_providers
from allocworker.db.catalog import resource_classes as db_classes
from allocworker.db.ledger import allocations as db_allocations
from allocworker.db.ledger import idempotency as db_idempotency
from allocworker.groups import judgement as groups
from allocworker import partitions
from allocworker import policy
from allocworker.quota import judgement as limits


# Where a request of a shared transaction came from: its call's context,
# the type its call gives new consumers, its index in its call.
Origin = collections.namedtuple('Origin', ['context', 'new_type', 'index'])
# What the caller locked or read in this transaction before the plan:
# the requested consumers that exist {uuid: Consumer}, providers {id:
# Locked} (a claim's candidate), memberships {uuid: {group id}} or None,
# the groups a claim locked with their members (``groups.judgement.
# Locked``) or None.
Prelocked = collections.namedtuple(
    'Prelocked', ['consumers', 'providers', 'group_ids', 'groups'],
    defaults=(None, None))


class BatchFailed(Exception):
    """Some items of a transaction are at fault; nothing was written."""

    def __init__(self, faults):
        super().__init__('%d item(s) at fault' % len(faults))
        self.faults = faults


class Plan(plan_writes.Writing):
    """One write transaction's reads, judgement and writes."""

    def __init__(self, conn, context, requests, atomic, new_type,
                 origins=None, prelocked=None):
        """``origins``: {request index: Origin} when the requests come
        from several calls (their indexes are then unique slots); each
        request is judged under its own call's context and named by its
        index in that call. ``prelocked``: rows the caller already holds
        locked, not read again (``Prelocked``)."""
        self.conn = conn
        self.prelocked = prelocked or Prelocked(None, {})
        self.new_type = new_type
        self.context = context
        self.requests = requests
        self.atomic = atomic
        self.origins = origins or {}
        self.faults, self.replayed, self.new_rows, self.changes = \
            {}, {}, {}, {}

    def _origin(self, request):
        return self.origins.get(request.index) or Origin(
            self.context, self.new_type, request.index)

    def _at(self, request):
        """'items[N]', N the request's index in its own call."""
        return 'items[%d]' % self._origin(request).index

    def _fail(self, request, fault):
        self.faults.setdefault(request.index, fault)

    def _live(self):
        return [r for r in self.requests if r.index not in self.faults
                and r.index not in self.replayed]

    def check(self):
        self._resolve_names()
        # The limits are read before any lock (None when off); the
        # project locks come last, at the first item judged by them.
        self.limits = limits.start(self.conn, self._live(), self._origin)
        self._lock_consumers()
        # Keys are looked up after the consumers are locked: a concurrent
        # writer of the same keyed item that committed before the lock
        # is then seen by both reads, or by the key lookup alone, and
        # the item is replayed rather than judged against its result.
        self._replay_keys()
        self._lock_groups()
        self._lock_providers()
        self._check_bound_callers()
        self._check_partitions()
        self._judge()
        if self.faults and self.atomic:
            raise BatchFailed(self.faults)

    def _replay_keys(self):
        """Items whose key was answered before get that answer again and
        write nothing; a key reused for another item is refused."""
        keyed = [r for r in self.requests if r.idempotency_key]
        if not keyed:
            return
        max_age = CONF.worker.idempotency_seconds
        keys = [r.idempotency_key for r in keyed]
        db_idempotency.forget_stale(self.conn, keys, max_age)
        remembered = db_idempotency.lookup(self.conn, keys, max_age)
        for r in keyed:
            seen = remembered.get(r.idempotency_key)
            if seen is None:
                continue
            if seen.request_hash == r.digest:
                self.replayed[r.index] = seen.answer
                self.faults.pop(r.index, None)
            else:
                self.faults[r.index] = codes.Fault(
                    codes.IDEMPOTENCY_KEY_REUSED,
                    '%s.idempotency_key %r was used for a different '
                    'item' % (self._at(r), r.idempotency_key))

    def _lock_groups(self):
        self.groups = groups.Judgement(self.conn, self.requests,
                                       self.prelocked.group_ids,
                                       self.prelocked.groups)
        for index, fault in self.groups.faults.items():
            self.faults.setdefault(index, fault)

    def _resolve_names(self):
        names = {n for r in self.requests for res in r.allocations.values()
                 for n in res}
        uuids = {p for r in self.requests for p in r.allocations}
        self.class_ids = db_classes.ids_by_name(self.conn, names)
        self.provider_ids = provider_ids.remembered_ids(self.conn, uuids)
        for r in self.requests:
            for provider_uuid, resources in r.allocations.items():
                if provider_uuid not in self.provider_ids:
                    self._fail(r, codes.Fault(
                        codes.PROVIDER_NOT_IN_BODY,
                        "%s.allocations: Allocation for resource "
                        "provider '%s' that does not exist"
                        % (self._at(r), provider_uuid)))
                for name in resources:
                    if name not in self.class_ids:
                        self._fail(r, codes.Fault(
                            codes.RESOURCE_CLASS_NOT_FOUND,
                            '%s.allocations.%s: No such resource '
                            'class %s' % (self._at(r), provider_uuid, name)))

    def _lock_consumers(self):
        uuids = [r.consumer_uuid for r in self._live()]
        if self.prelocked.consumers is None:
            self.consumers = db_allocations.lock_consumers(self.conn, uuids)
        else:
            self.consumers = {u: self.prelocked.consumers[u] for u in uuids
                              if u in self.prelocked.consumers}
        for r in self._live():
            consumer = self.consumers.get(r.consumer_uuid)
            context = self._origin(r).context
            if consumer and consumer.project_id != r.project_id and \
                    not policy.allowed(context, 'allocate',
                                       consumer.project_id):
                self._fail(r, policy.denied(
                    context, 'allocate', 'consumer %s of project %s'
                    % (r.consumer_uuid, consumer.project_id)))
                continue
            current = consumer.generation if consumer else None
            if r.generation != current:
                self._fail(r, codes.Fault(
                    codes.CONSUMER_GENERATION_CONFLICT,
                    '%s: consumer %s is at generation %s, not %s'
                    % (self._at(r), r.consumer_uuid, _show(current),
                       _show(r.generation)),
                    consumer_generation=current))
        self.old = db_allocations.rows_of(
            self.conn, [c.id for c in self.consumers.values()])

    def _old_rows(self, request):
        consumer = self.consumers.get(request.consumer_uuid)
        return self.old.get(consumer.id, {}) if consumer else {}

    def _new_rows(self, request):
        """{(provider_id, class): amount} the request asks for (built once
        per request; every judgement and the commit read it)."""
        rows = self.new_rows.get(request.index)
        if rows is None:
            rows = self.new_rows[request.index] = {
                (self.provider_ids[p], name): amount
                for p, resources in request.allocations.items()
                for name, amount in resources.items()}
        return rows

    def _lock_providers(self):
        live = self._live()
        touched = set()
        for r in live:
            touched.update(pid for pid, _name in self._old_rows(r))
            touched.update(pid for pid, _name in self._new_rows(r))
        held = self.prelocked.providers
        self.locked = {pid: held[pid] for pid in touched if pid in held}
        if len(self.locked) < len(touched):
            self.locked = db_providers.lock(self.conn, touched)
        stale = [uuid for uuid, pid in self.provider_ids.items()
                 if pid in touched and (pid not in self.locked or
                                        self.locked[pid].uuid != uuid)]
        if stale or len(self.locked) != len(touched):
            # A provider was deleted (and maybe created again) since its
            # id was remembered or resolved: resolve afresh.
            provider_ids.forget(self.conn, stale)
            raise db.ConcurrentUpdate('provider vanished')
        self.uuid_of = {pid: row.uuid for pid, row in self.locked.items()}

    def _check_bound_callers(self):
        """A caller bound to a partition writes only consumers and
        providers it sees (``bindings``): an item whose consumer holds, or
        would hold, allocations on a provider of another partition is
        its 403. From the provider locks: no statement of its own."""
        for r in self._live():
            view = bindings.seen(self._origin(r).context)
            if view is None:
                continue
            for pid, _name in sorted(set(self._old_rows(r)) |
                                     set(self._new_rows(r))):
                if bindings.hides(view, self.locked[pid].partition):
                    self._fail(r, bindings.forbidden(
                        self._origin(r).context, '%s: consumer %s or '
                        'provider %s' % (self._at(r), r.consumer_uuid,
                                         self._uuid(pid))))
                    break

    def _check_partitions(self):
        """Refuse items whose providers lie in several partitions,
        ``shared`` aside, before anything is judged on the books (an
        atomic batch then leaves them out of its combined result). The
        partitions came with the provider locks: no statement of its
        own."""
        if len({row.partition for row in self.locked.values()}) < 2:
            return  # the common case: nothing to tell apart
        for r in self._live():
            by_partition = {self.locked[pid].partition: self._uuid(pid)
                            for pid, _name in sorted(self._new_rows(r))}
            apart = partitions.apart(set(by_partition))
            if apart:
                self._fail(r, partitions.mismatch(
                    self._at(r), {p: by_partition[p] for p in apart}))

    def _judge(self):
        """Judge capacity, units and group policies.

        Atomic: on the combined result of every item. Independent: item by
        item in request order, each against the state the items before it
        left, exactly as if each were its own transaction run in that
        order; a failed item changes nothing for the next.
        """
        if self.limits and self.prelocked.consumers is None:
            # An allocate's own plan: one round trip locks its projects
            # too (a claim's try locks them once its candidate fits).
            self.state = self.limits.capacity_state(set(self.locked))
        else:
            self.state = db_providers.capacity_state(self.conn,
                                                     set(self.locked))
        inventories, before = self.state.inventories, self.state.used
        self.warnings = {}
        if self.atomic:
            self._judge_combined(inventories, before)
            return
        running = dict(before)
        for r in self._live():
            old, new = self._old_rows(r), self._new_rows(r)
            for key, amount in sorted(new.items()):
                self._check_units(r, key, amount, inventories.get(key))
            if r.index in self.faults:
                continue
            after, over = capacity.item_usage(inventories, running, old, new)
            if over and self._blame_capacity(r, over, after):
                continue
            if self.groups.concerns(r):
                placement = self._placement(r)
                faults, warnings = self.groups.judge([placement])
                if faults:
                    self._fail(r, faults[r.index])
                    continue
            if self.limits and self._over_limit(r):
                continue
            if self.groups.concerns(r):
                self.groups.accept(*placement[:3])
                self.warnings.update(warnings)
            running.update(after)

    def _judge_combined(self, inventories, before):
        removed, added = collections.Counter(), collections.Counter()
        for r in self._live():
            old, new = self._old_rows(r), self._new_rows(r)
            removed.update(old)
            added.update(new)
            for key, amount in sorted(new.items()):
                self._check_units(r, key, amount, inventories.get(key))
        after = capacity.usage_after(before, removed, added)
        over = capacity.overcommitted(inventories, before, after)
        for r in self._live():
            self._blame_capacity(r, over, after)
        faults, self.warnings = self.groups.judge(
            [self._placement(r) for r in self._live()
             if self.groups.concerns(r)])
        for index, fault in faults.items():
            self.faults.setdefault(index, fault)
        if self.limits:
            for index, fault in self.limits.judge_combined(
                    [self._limit_item(r) for r in self._live()]).items():
                self.faults.setdefault(index, fault)

    def _limit_item(self, request):
        """What the limits judge an item by."""
        return (request, self.consumers.get(request.consumer_uuid),
                self._old_rows(request), self._new_rows(request))

    def _over_limit(self, request):
        """Fail the request if it grows its project past a limit."""
        fault = self.limits.judge(*self._limit_item(request))
        if fault is not None:
            self._fail(request, fault)
        return fault is not None

    def _blame_capacity(self, request, over, after):
        """Fail the request if it adds usage where ``over``; True if so."""
        old, new = self._old_rows(request), self._new_rows(request)
        for key in sorted(over):
            if new.get(key, 0) > old.get(key, 0):
                self._fail(request, codes.Fault(
                    codes.CAPACITY_EXCEEDED,
                    '%s: %s on provider %s would be %d, above its '
                    'capacity %g' % (self._at(request), key[1],
                                     self._uuid(key[0]), after[key],
                                     capacity.capacity(
                                         self.state.inventories[key]))))
                return True
        return False

    def _placement(self, request):
        """(request, consumer type, {root id}, {class id}) as the group
        rules judge it."""
        rows = self._new_rows(request)
        consumer = self.consumers.get(request.consumer_uuid)
        kind = request.consumer_type or (
            consumer.consumer_type if consumer else None) or \
            self._origin(request).new_type
        return (request, kind,
                {self.locked[pid].root_id for pid, _name in rows},
                {self.class_ids[name] for _pid, name in rows})

    def _uuid(self, provider_id):
        return self.uuid_of.get(provider_id, provider_id)

    def _check_units(self, request, key, amount, inventory):
        why = inventory and capacity.unit_violation(inventory, amount)
        if inventory is not None and not why:
            return  # the common case, without building any message
        pid, name = key
        where = '%s.allocations.%s.%s' % (self._at(request),
                                          self._uuid(pid), name)
        if inventory is None:
            self._fail(request, codes.Fault(
                codes.INVENTORY_NOT_FOUND,
                "%s: Inventory for '%s' on resource provider '%s' "
                "invalid (the provider has no inventory of that class)"
                % (where, name, self._uuid(pid))))
            return
        self._fail(request, codes.Fault(
            codes.ALLOCATION_UNIT_VIOLATION, '%s: %d %s' % (where, amount,
                                                            why)))

    def commit(self):
        """Write what was judged: (results, notification payloads)."""
        return self.finish(db_allocations.write_set(self.conn,
                                                    self.write_set()))


def _show(generation):
    return 'null' if generation is None else generation
