"""What an allocation plan writes, and how its items are answered once
written: the ``Writing`` half of ``plan.Plan``.

``write_set`` turns the judged items into one ``db.allocations.WriteSet``
(consumers created, updated or emptied, allocation rows, usage counters
per provider and per project, provider generations); ``finish`` answers
the items from what that write returned. ``Plan.commit`` does both at
once; a claim's transaction may hold several plans' write sets back and
send them together (``staging``).
"""

import collections

from allocworker.db.catalog import resource_classes as db_classes
from allocworker.db.ledger import allocations as db_allocations
from allocworker.db.ledger import idempotency as db_idempotency
from allocworker import metrics
from allocworker import partitions


class Writing(object):
    """Mixed into ``plan.Plan``: reads its judged state (``consumers``,
    ``locked``, ``state``, ``faults``, ``replayed``, ``groups``...)."""

    def write_set(self):
        """The ``WriteSet`` of the items judged; ``finish`` answers them
        once it is written (``commit``, or ``staging`` with others)."""
        live = self._live()
        existing = {r.consumer_uuid: self.consumers[r.consumer_uuid]
                    for r in live if r.consumer_uuid in self.consumers}
        emptied, updated, created, kinds = [], [], [], {}
        for r in live:
            consumer = existing.get(r.consumer_uuid)
            if not r.allocations:
                if consumer:
                    emptied.append(consumer)
                kinds[r.index] = consumer and consumer.consumer_type
                continue
            if r.consumer_type or not consumer:
                kinds[r.index] = r.consumer_type or \
                    self._origin(r).new_type
            else:
                kinds[r.index] = consumer.consumer_type
            if consumer:
                updated.append((r.consumer_uuid, consumer.id,
                                consumer.generation, r.project_id,
                                r.user_id, kinds[r.index]))
            else:
                created.append((r.consumer_uuid, r.project_id, r.user_id,
                                kinds[r.index]))
        self.kinds = kinds
        # As in Placement, a provider's generation moves when a write
        # places allocations on it; releasing allocations frees capacity
        # and cannot spoil anyone's decision, so it leaves it alone.
        placed = {pid for r in live for pid, _name in self._new_rows(r)}
        usage, project_usage, project_consumers = self._usage_deltas(
            live, kinds)
        return db_allocations.WriteSet(
            replaced=[c.id for c in existing.values()], updated=updated,
            created=created, emptied=emptied,
            rows=[(r.consumer_uuid, pid, self.class_ids[name], amount)
                  for r in live
                  for (pid, name), amount in self._new_rows(r).items()],
            usage=usage, project_usage=project_usage,
            project_consumers=project_consumers,
            bumps={pid: self.locked[pid].generation for pid in placed})

    def finish(self, now_held):
        """(results, payloads) once ``write_set()`` is written;
        ``now_held``: what the write answered, {consumer uuid: (id,
        generation)}."""
        live = self._live()
        results = dict(self.replayed)
        metrics.replayed(len(self.replayed))
        results.update(self.faults)
        for r in live:
            generation = (now_held[r.consumer_uuid][1] if r.allocations
                          else None)
            results[r.index] = _success(r, generation)
            self.changes[r.index] = _change(
                r, generation, self.kinds[r.index], partitions.lives_in(
                    {self.locked[pid].partition for pid, _name in
                     set(self._new_rows(r)) | set(self._old_rows(r))}))
        self.groups.commit(live)
        for index, warnings in self.warnings.items():
            results[index]['warnings'] = warnings
        db_idempotency.remember(self.conn, [
            (r.idempotency_key, r.digest, results[r.index])
            for r in live if r.idempotency_key])
        return results, list(self.changes.values())

    def _usage_deltas(self, live, kinds):
        """How the committed items move the counters: ({(provider_id,
        class_id): delta}, {(project_id, type, class_id): delta},
        {(project_id, type): consumers delta}). A consumer's old rows
        leave its old project and type, its new rows join the item's."""
        by_name, projects = collections.Counter(), collections.Counter()
        consumers = collections.Counter()
        for r in live:
            consumer = self.consumers.get(r.consumer_uuid)
            moves = [(1, r.project_id, kinds[r.index], self._new_rows(r))]
            if consumer:
                moves.append((-1, consumer.project_id,
                              consumer.consumer_type, self._old_rows(r)))
            for sign, project, kind, rows in moves:
                if sign > 0 and not r.allocations:
                    continue  # emptied: the consumer goes
                consumers[(project, kind)] += sign
                for (pid, name), amount in rows.items():
                    by_name[(pid, name)] += sign * amount
                    projects[(project, kind, name)] += sign * amount
        # Old rows may name a class no locked provider keeps inventory of
        # any more (a reshape moved it); those ids are looked up.
        ids = dict(self.state.class_ids)
        missing = {name for _pid, name in by_name if name not in ids}
        if missing:
            ids.update(db_classes.ids_by_name(self.conn, missing))
        return ({(pid, ids[name]): d for (pid, name), d in by_name.items()},
                {(p, k, ids[name]): d for (p, k, name), d in projects.items()},
                consumers)


def _change(request, generation, consumer_type, partition):
    """The allocation.changed notification payload of one request."""
    return {'consumer_uuid': request.consumer_uuid,
            'consumer_generation': generation,
            'project_id': request.project_id, 'user_id': request.user_id,
            'consumer_type': consumer_type, 'partition': partition,
            'allocations': request.allocations}


def _success(request, generation):
    return {'consumer_uuid': request.consumer_uuid, 'status': 200,
            'consumer_generation': generation}
