"""A ``claim`` call's items parsed and authorized: allocate's rules for
the fields a claim shares with it (``writes.prepared``), the claim's
own fields (``request``, ``strategy``, ``exclude_roots``), and the
``claim`` policy on each item's project."""

import collections

from allocworker.allocations import writes
from allocworker import codes
from allocworker import items as item_results
from allocworker import policy
from allocworker import validation
from allocworker.conf import CONF
from allocworker.scheduling import candidates
from allocworker.scheduling import choosing
from allocworker.scheduling import lookup

OWN_FIELDS = ('request', 'strategy', 'exclude_roots')
ITEM_FIELDS = tuple(f for f in writes.ITEM_FIELDS
                    if f != 'allocations') + OWN_FIELDS
Claim = collections.namedtuple(
    'Claim', ['request', 'wanted', 'strategy', 'exclude_roots'])


def _parse_own(raw, index):
    """(wanted, strategy, exclude_roots) of one item."""
    where = 'items[%d]' % index
    validation.mapping(raw, where)
    validation.only_keys(raw, where, ITEM_FIELDS)
    wanted = lookup.parse(validation.required(raw, where, 'request'), where)
    strategy = raw.get('strategy', choosing.SPREAD)
    if strategy not in choosing.STRATEGIES:
        raise validation.invalid('%s.strategy must be one of %s, not %r'
                                 % (where, ', '.join(choosing.STRATEGIES),
                                    strategy))
    exclude = raw.get('exclude_roots', [])
    validation.uuid_list(exclude, where + '.exclude_roots',
                         CONF.worker.max_batch_items)
    exclude = frozenset(
        validation.uuid(u, '%s.exclude_roots[%d]' % (where, i))
        for i, u in enumerate(exclude))
    return wanted, strategy, exclude


def _as_allocate_item(raw):
    """The item as allocate sees it: its own fields, nothing allocated."""
    if not isinstance(raw, dict):
        return raw
    item = {k: v for k, v in raw.items() if k not in OWN_FIELDS}
    item['allocations'] = {}
    return item


def parsed(context, items):
    """[Claim | Fault] in input order: allocate's parsing, duplicate and
    authorization rules for the fields a claim shares with it, and the
    ``claim`` policy on the item's project."""
    validation.batch(items, 'items', CONF.worker.max_batch_items)
    own = item_results.each(items, _parse_own, 'items')
    shared = writes.prepared(context, [_as_allocate_item(i) for i in items])
    result = []
    for raw, mine, request in zip(items, own, shared):
        if isinstance(mine, codes.Fault) or isinstance(request, codes.Fault):
            result.append(mine if isinstance(mine, codes.Fault)
                          else request)
        elif not policy.allowed(context, 'claim', request.project_id):
            result.append(policy.denied(
                context, 'claim', 'consumer %s of project %s'
                % (request.consumer_uuid, request.project_id)))
        else:
            if request.idempotency_key:
                # A repeat is the same claim only with the same request.
                request = request._replace(digest=writes.item_digest(raw))
            result.append(_scoped(context, Claim(request, *mine)))
    return result


def _scoped(context, claim):
    """``claim`` searching the partitions its caller sees, or its 403."""
    try:
        return claim._replace(wanted=candidates.scoped(
            context, claim.wanted, 'items[%d].request' % claim.request.index))
    except codes.Fault as fault:
        return fault
