"""Consumer group policies (design §2), as pure logic.

A member's *roots* are the root providers of the providers its allocations
are on. ``after`` maps every member holding allocations once the write is
applied to its roots; ``before`` the same for now; ``movers`` are the
members the write changes (or brings into the group). Only movers are
judged: a write is blamed for what it does, never for what others did.
"""

import collections

AFFINITY = 'affinity'
ANTI_AFFINITY = 'anti-affinity'
SOFT_AFFINITY = 'soft-affinity'
SOFT_ANTI_AFFINITY = 'soft-anti-affinity'
POLICIES = (AFFINITY, ANTI_AFFINITY, SOFT_AFFINITY, SOFT_ANTI_AFFINITY)
HARD = (AFFINITY, ANTI_AFFINITY)
ANTI = (ANTI_AFFINITY, SOFT_ANTI_AFFINITY)
SOFT_WARNING = 'group.soft_policy'


def breakers(policy, max_per_root, before, after, movers):
    """The movers whose new placement breaks the policy."""
    if policy in ANTI:
        per_root = collections.Counter(
            root for roots in after.values() for root in roots)
        return {m for m in movers
                if any(per_root[root] > (max_per_root or 1)
                       for root in set(after.get(m, ())) -
                       set(before.get(m, ())))}
    broken = set()
    for mover in movers:
        mine = set(after.get(mover, ()))
        if not mine:
            continue
        others = set()
        for member, roots in after.items():
            if member != mover:
                others.update(roots)
        if len(mine | others) > 1:
            broken.add(mover)
    return broken
