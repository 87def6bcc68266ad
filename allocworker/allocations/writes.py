"""Writing consumers' allocations: the heart of the books.

A consumer exists exactly while it holds allocations. ``allocate`` parses
and authorizes the items, then runs one ``allocation_plan.Plan`` per
transaction (all items together, or each item alone when the shared
transaction fails unexpectedly), so every item gets an answer and a failed
transaction writes nothing. Reads of consumers live in ``consumers``.
"""

import collections
import hashlib

from oslo_log import log as logging
from oslo_serialization import jsonutils

from allocworker.allocations import group_commit
from allocworker.allocations import plan as allocation_plan
from allocworker.allocations import refusals
from allocworker import codes
from allocworker import items as item_results
from allocworker import metrics
from allocworker import notifications
from allocworker import policy
from allocworker import retry
from allocworker import validation
from allocworker.conf import CONF
from allocworker.db import api as db

LOG = logging.getLogger(__name__)

Request = collections.namedtuple(
    'Request', ['index', 'consumer_uuid', 'generation', 'project_id',
                'user_id', 'consumer_type', 'allocations', 'group_uuid',
                'idempotency_key', 'digest'])

ITEM_FIELDS = ('consumer_uuid', 'consumer_generation', 'project_id',
               'user_id', 'consumer_type', 'allocations', 'group_uuid',
               'idempotency_key')
DEFAULT_CONSUMER_TYPE = 'INSTANCE'
BatchFailed = allocation_plan.BatchFailed
Prelocked = allocation_plan.Prelocked


# -- parsing ---------------------------------------------------------------

def parse_item(raw, index):
    """The item's Request, or the Fault naming its first bad field (the
    checks run in the order the contract names faults)."""
    where = 'items[%d]' % index
    validation.mapping(raw, where)
    validation.only_keys(raw, where, ITEM_FIELDS)
    uuid = validation.uuid(validation.required(raw, where, 'consumer_uuid'),
                           where + '.consumer_uuid')
    generation = validation.required(raw, where, 'consumer_generation')
    validation.optional_integer(generation, where + '.consumer_generation',
                                minimum=0, maximum=None)
    project_id = validation.string(
        validation.required(raw, where, 'project_id'), where + '.project_id')
    user_id = validation.string(
        validation.required(raw, where, 'user_id'), where + '.user_id')
    consumer_type = raw.get('consumer_type')
    if consumer_type is not None:
        validation.consumer_type(consumer_type, where + '.consumer_type')
    allocations = validation.mapping(
        validation.required(raw, where, 'allocations'),
        where + '.allocations')
    parsed = {}
    for provider_uuid, resources in allocations.items():
        at = '%s.allocations.%s' % (where, provider_uuid)
        canonical = validation.uuid(provider_uuid,
                                    where + '.allocations key')
        if canonical in parsed:
            raise validation.invalid('%s names provider %s twice'
                                     % (where + '.allocations', canonical))
        validation.mapping(resources, at)
        if not resources:
            raise validation.invalid('%s must name at least one resource '
                                     'class' % at)
        for name, amount in resources.items():
            validation.resource_class(name, at + ' key')
            validation.integer(amount, '%s.%s' % (at, name), minimum=1)
        parsed[canonical] = dict(resources)
    group_uuid = validation.optional_uuid(raw.get('group_uuid'),
                                          where + '.group_uuid')
    key = raw.get('idempotency_key')
    if key is not None:
        validation.string(key, where + '.idempotency_key')
    return Request(index, uuid, generation, project_id, user_id,
                   consumer_type, parsed, group_uuid, key,
                   _digest(raw) if key else None)


def _digest(raw):
    """What makes two items with one idempotency key the same item."""
    body = {k: v for k, v in raw.items() if k != 'idempotency_key'}
    return hashlib.sha256(jsonutils.dumps(body, sort_keys=True).encode(
        'utf-8')).hexdigest()


# Claims (scheduling/claims.py) compare their items by the same rule.
item_digest = _digest


def _parse_batch(batch):
    """[Request | Fault] in input order; a consumer named twice faults
    every item that names it."""
    parsed = item_results.each(batch, parse_item, 'items')
    requests = [r for r in parsed if type(r) is Request]
    keys = [r.idempotency_key for r in requests if r.idempotency_key]
    if len({r.consumer_uuid for r in requests}) == len(requests) and \
            len(set(keys)) == len(keys):
        return parsed  # the common case: nothing named twice
    for field in ('consumer_uuid', 'idempotency_key'):
        seen = collections.Counter(getattr(r, field) for r in parsed
                                   if isinstance(r, Request))
        for i, r in enumerate(parsed):
            value = getattr(r, field, None)
            if isinstance(r, Request) and value and seen[value] > 1:
                parsed[i] = validation.invalid(
                    'items[%d].%s %s appears %d times in this call'
                    % (i, field, value, seen[value]))
    return parsed


# -- allocate --------------------------------------------------------------

def allocate(context, items, atomic=False):
    return write(context, items, atomic)


def write(context, items, atomic=False, new_type=DEFAULT_CONSUMER_TYPE):
    """``allocate``, with the type a new consumer gets when its item names
    none: None records no type (Placement's API before 1.38)."""
    parsed = prepared(context, items)
    validation.boolean(atomic, 'atomic')
    if atomic:
        changes = []
        results = _allocate_atomic(context, parsed, changes, new_type)
    else:
        results, changes = _allocate_independent(context, parsed, new_type)
    notifications.emit(context, notifications.ALLOCATION_CHANGED, changes)
    return refusals.settle(reached(parsed, atomic), answers(items, results))


def reached(parsed, atomic):
    """The requests of ``parsed`` that reached a transaction: none of an
    atomic call with an item refused before it (``refused``)."""
    requests = [r for r in parsed if isinstance(r, Request)]
    return [] if atomic and len(requests) < len(parsed) else requests


def prepared(context, items):
    """Allocate items parsed and authorized: [Request | Fault]."""
    validation.batch(items, 'items', CONF.worker.max_batch_items)
    return [_authorized(context, r) for r in _parse_batch(items)]


def write_in(conn, context, requests, new_type=DEFAULT_CONSUMER_TYPE,
             prelocked=None):
    """Judge and commit ``requests`` atomically inside ``conn``'s
    transaction: (results, notification payloads), or BatchFailed.
    ``prelocked``: what the caller holds locked already
    (``plan.Prelocked``)."""
    return judged_in(conn, context, requests, new_type, prelocked).commit()


def judged_in(conn, context, requests, new_type=DEFAULT_CONSUMER_TYPE,
              prelocked=None):
    """``write_in``'s plan judged and not written yet (its ``commit``
    writes it, or ``staging`` with others), or BatchFailed."""
    plan = allocation_plan.Plan(conn, context, requests, True, new_type,
                                prelocked=prelocked)
    plan.check()
    return plan


def answers(items, results):
    """The result items of ``items``, from their results by index (a list,
    or {index: item | Fault})."""
    return [_result_item(items[i], results[i]) for i in range(len(items))]


def _authorized(context, request):
    """The request, or its 403 when the caller may not write its project."""
    if isinstance(request, Request) and not policy.allowed(
            context, 'allocate', request.project_id):
        return policy.denied(context, 'allocate', 'consumer %s of project %s'
                             % (request.consumer_uuid, request.project_id))
    return request


def _result_item(raw, result):
    if isinstance(result, codes.Fault):
        return result.item(**item_results.echo_fields(raw, 'consumer_uuid'))
    return result


def _allocate_atomic(context, parsed, changes, new_type):
    refusal = refused(parsed)
    if refusal:
        return refusal
    outcome = _atomic_turns.submit(
        lambda: _guarded(context, parsed, changes, True, new_type))
    return [outcome[r.index] for r in parsed]


class _Call(object):
    """The valid items of one independent call, waiting for a shared
    transaction."""
    __slots__ = ('context', 'requests', 'new_type')

    def __init__(self, context, requests, new_type):
        self.context, self.requests, self.new_type = \
            context, requests, new_type

    def keys(self):
        return call_keys(self.requests)


def call_keys(requests):
    """What two calls in one shared transaction must not share: their
    consumers and idempotency keys."""
    keys = {r.consumer_uuid for r in requests}
    keys.update(('key', r.idempotency_key) for r in requests
                if r.idempotency_key)
    return keys


def _allocate_independent(context, parsed, new_type):
    """([result | Fault] in input order, notification payloads).

    The valid items join those of concurrent calls in one shared
    transaction (``group_commit``); each is judged exactly as if its call
    ran alone, right after the calls before it in that transaction."""
    requests = [r for r in parsed if isinstance(r, Request)]
    if not requests:
        return parsed, []
    call = _Call(context, requests, new_type)
    outcome, changes = _shared.submit(call, len(requests), call.keys())
    return [r if isinstance(r, codes.Fault) else outcome[r.index]
            for r in parsed], changes


def _write_calls(calls):
    """Run the calls' items in one transaction; [(outcome, changes)]
    per call. If that transaction fails for any reason but an item's own
    fault, each call runs again alone, so a failure shared by chance
    never reaches a call that would not have met it."""
    metrics.shared_transaction(calls)
    if len(calls) == 1:
        return [_write_alone(calls[0])]
    requests, origins, owner = [], {}, []
    for n, call in enumerate(calls):
        for r in call.requests:
            origins[len(requests)] = allocation_plan.Origin(
                call.context, call.new_type, r.index)
            owner.append((n, r.index))
            requests.append(r._replace(index=len(requests)))
    try:
        results, changes = retry.write(_write, calls[0].context, requests,
                                       False, None, origins)
    except Exception as exc:
        LOG.warning('a transaction shared by %d calls failed (%s: %s); '
                    'each call runs again on its own', len(calls),
                    type(exc).__name__, exc)
        return [_write_alone(call) for call in calls]
    answered = [({}, []) for _ in calls]
    for slot, (n, index) in enumerate(owner):
        answered[n][0][index] = results[slot]
        if slot in changes:
            answered[n][1].append(changes[slot])
    return answered


def _write_alone(call):
    """One call's items in one transaction; if that transaction fails
    unexpectedly, each item gets its own, so only the item at fault
    answers 500."""
    changes = []
    context, requests = call.context, call.requests
    outcome = _guarded(context, requests, changes, False, call.new_type)
    if any(_is_unexpected(o) for o in outcome.values()) and \
            len(requests) > 1:
        outcome = {}
        for r in requests:
            outcome.update(_guarded(context, [r], changes, False,
                                    call.new_type))
    return outcome, changes


def _is_unexpected(outcome):
    return isinstance(outcome, codes.Fault) and \
        outcome.code == codes.INTERNAL_ERROR


def aborted(request):
    return codes.Fault(codes.BATCH_ABORTED,
                       'items[%d] was valid but the atomic batch was rolled '
                       'back because of another item' % request.index)


def refused(parsed):
    """An atomic batch with items that did not parse or were denied: their
    faults, batch.aborted for the others; [] when every item is a
    Request."""
    if all(isinstance(r, Request) for r in parsed):
        return []
    return [r if isinstance(r, codes.Fault) else aborted(r) for r in parsed]


def blamed(failed, requests):
    """{index: Fault} of an atomic batch that failed (BatchFailed): each
    item's own fault, batch.aborted for the others."""
    return {r.index: failed.faults.get(r.index) or aborted(r)
            for r in requests}


def _guarded(context, requests, changes, atomic, new_type):
    """Write ``requests`` in one transaction; {index: item | Fault}."""
    return guarded(_write, 'allocate', context, requests, changes,
                   context, requests, atomic, new_type)


def guarded(transaction, what, context, requests, changes, *args):
    """``transaction(*args)`` with retries: {index: item | Fault}.

    Whatever goes wrong, every request gets an answer and a failed
    transaction writes nothing. The notification payloads of what was
    committed are appended to ``changes``.
    """
    try:
        results, committed = retry.write(transaction, *args)
        changes.extend(committed)
        return results
    except allocation_plan.BatchFailed as failed:
        return blamed(failed, requests)
    except codes.Fault as fault:
        return {r.index: fault for r in requests}
    except Exception:
        request_id = getattr(context, 'request_id', None)
        LOG.exception('%s failed unexpectedly (request %s)', what,
                      request_id)
        return {r.index: codes.unexpected(request_id) for r in requests}


def _write(context, requests, atomic, new_type, origins=None):
    """One transaction: (results, payloads), or with ``origins`` (a
    shared transaction) (results, {index: payload})."""
    with db.writer() as conn:
        plan = allocation_plan.Plan(conn, context, requests, atomic,
                                    new_type, origins)
        plan.check()
        results, changes = plan.commit()
        return results, (plan.changes if origins else changes)


# Atomic calls of this process reach the database one at a time, in the
# order they came: PostgreSQL does not grant row locks in arrival order,
# so concurrent atomic batches over the same providers starved some of
# them (p50 0.12 s, p99 2.9 s at c=16).
_atomic_turns = group_commit.Combiner(
    lambda turns: [turn() for turn in turns], lambda: 1)

# Independent calls of this process share transactions (group commit).
_shared = group_commit.Combiner(
    _write_calls, lambda: CONF.worker.shared_transaction_items)
