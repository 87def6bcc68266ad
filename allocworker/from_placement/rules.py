"""Placement's books judged by allocworker's rules, item by item, before
anything is written: each function returns what is carried over and
the issues found (``Issue``), never raising for the source's content.

The decisions are design §1's and §2's: a consumer exists only while
it holds allocations (one without is not carried over); a provider
over capacity keeps its books as they are and is listed (reality
changed: its inventory is marked as knowingly below usage); an
allocation that breaks units set later keeps its amount and is listed.
"""

import collections

from allocworker import capacity
from allocworker import codes
from allocworker import validation

Issue = collections.namedtuple('Issue', ['kind', 'uuid', 'detail',
                                         'decision'])

NOT_CARRIED = 'not carried over'
AS_IT_IS = 'carried over as it is'
CHANGED = 'carried over changed'


def _check(check, *args):
    """The detail of ``check``'s refusal, or None."""
    try:
        check(*args)
    except codes.Fault as fault:
        return fault.detail
    return None


def provider(uuid, name):
    """(name to keep, [Issue]); None for a provider not carried over."""
    bad = _check(validation.uuid, uuid, 'uuid')
    if bad:
        return None, [Issue('provider', uuid, bad, NOT_CARRIED)]
    if name is None or _check(validation.string, name, 'name', 1, 200):
        return uuid, [Issue('provider', uuid, 'name %r is not 1-200 '
                            'characters; the uuid is its name' % (name,),
                            CHANGED)]
    return name, []


def inventory(provider_uuid, class_name, fields):
    """(Inventory, [Issue]); None when refused. ``fields`` are total,
    reserved, min_unit, max_unit, step_size, allocation_ratio."""
    total, reserved, min_unit, max_unit, step_size, ratio = fields
    checks = [
        (validation.resource_class, class_name, 'resource class'),
        (validation.integer, total, 'total', 1),
        (validation.integer, reserved, 'reserved', 0),
        (validation.integer, min_unit, 'min_unit', 1),
        (validation.integer, max_unit, 'max_unit', 1),
        (validation.integer, step_size, 'step_size', 1),
        (validation.positive_number, ratio, 'allocation_ratio')]
    for check in checks:
        bad = _check(*check)
        if bad:
            return None, [Issue('inventory', provider_uuid,
                                '%s: %s' % (class_name, bad), NOT_CARRIED)]
    return capacity.Inventory(total, reserved, min_unit, max_unit,
                              step_size, float(ratio)), []


def consumer(uuid, project_id, user_id, consumer_type, rows,
             inventories):
    """[Issue] of one consumer, with ``rows`` {(provider_uuid, class
    name): used} and ``inventories`` {(provider_uuid, class name):
    Inventory} (those judged above). The consumer is carried over
    unless an issue says ``NOT_CARRIED``."""
    checks = [(validation.uuid, uuid, 'consumer uuid'),
              (validation.string, project_id, 'project_id'),
              (validation.string, user_id, 'user_id')]
    if consumer_type is not None:
        checks.append((validation.consumer_type, consumer_type,
                       'consumer_type'))
    for check in checks:
        bad = _check(*check)
        if bad:
            return [Issue('consumer', uuid, bad, NOT_CARRIED)]
    if not rows:
        return [Issue('consumer', uuid, 'holds no allocations (a consumer '
                      'exists only while it holds some)', NOT_CARRIED)]
    issues = []
    for (provider_uuid, class_name), used in sorted(rows.items()):
        held = inventories.get((provider_uuid, class_name))
        if held is None:
            return [Issue('consumer', uuid, '%d %s on provider %s, which '
                          'has no inventory of it' % (
                              used, class_name, provider_uuid),
                          NOT_CARRIED)]
        if used < 1:
            return [Issue('consumer', uuid, 'allocation of %d %s on '
                          'provider %s is below 1' % (
                              used, class_name, provider_uuid),
                          NOT_CARRIED)]
        why = capacity.unit_violation(held, used)
        if why:
            issues.append(Issue('consumer', uuid, '%d %s on provider %s %s'
                                % (used, class_name, provider_uuid, why),
                                AS_IT_IS))
    return issues


def catalogue_name(kind, name):
    """An Issue when ``name`` is no valid resource class or trait name."""
    bad = _check(validation.resource_class, name, kind)
    return Issue(kind, name, bad, NOT_CARRIED) if bad else None


def over_capacity(provider_uuid, class_name, used, room):
    return Issue('provider', provider_uuid, '%s: %d used, capacity %g '
                 '(inventory marked as knowingly below usage)'
                 % (class_name, used, room), AS_IT_IS)


def carried(issues):
    return not any(i.decision == NOT_CARRIED for i in issues)
