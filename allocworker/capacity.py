"""The capacity rule of design §2, as pure functions.

Keys are (provider_uuid, resource_class) pairs. Usage is judged on the state
a transaction would commit: ``before`` is what is allocated now, ``after``
what would be allocated once every change of the write is applied.
"""

import collections

Inventory = collections.namedtuple(
    'Inventory', ['total', 'reserved', 'min_unit', 'max_unit', 'step_size',
                  'allocation_ratio'])

DEFAULTS = {'reserved': 0, 'min_unit': 1, 'max_unit': 2147483647,
            'step_size': 1, 'allocation_ratio': 1.0}


def capacity(inventory):
    return (inventory.total - inventory.reserved) * inventory.allocation_ratio


def fits(inventory, used):
    return used <= capacity(inventory)


def unit_violation(inventory, amount):
    """Why one allocation of ``amount`` breaks the units, or None."""
    if amount < inventory.min_unit:
        return 'is below min_unit %d' % inventory.min_unit
    if amount > inventory.max_unit:
        return 'is above max_unit %d' % inventory.max_unit
    if amount % inventory.step_size:
        return 'is not a multiple of step_size %d' % inventory.step_size
    return None


def usage_after(before, removed, added):
    """Usage per key once ``removed`` rows go and ``added`` rows come."""
    after = collections.Counter(before)
    for rows, sign in ((removed, -1), (added, 1)):
        for key, amount in rows.items():
            after[key] += sign * amount
    return after


def overcommitted(inventories, before, after):
    """Keys the write would leave over capacity while raising their usage.

    A write that does not increase a key's usage is allowed even when the
    key is already over capacity (its inventory was shrunk with force).
    """
    return {key for key, used in after.items()
            if key in inventories and used > before.get(key, 0)
            and not fits(inventories[key], used)}


def item_usage(inventories, running, old, new):
    """One item judged on its own against ``running`` usage: (usage after
    it, for the keys it touches; those keys it would leave over capacity
    while raising their usage). Only touched keys are computed, so a batch
    judged item by item stays linear."""
    after = {}
    for key, amount in new.items():
        after[key] = running.get(key, 0) - old.get(key, 0) + amount
    for key, amount in old.items():
        if key not in after:
            after[key] = running.get(key, 0) - amount
    return after, overcommitted(inventories, running, after)
