"""The limit rule, pure: what a consumer counts, and when a change of a
project's usage is refused.

Resources carry Nova's names: ``class:<resource class>`` sums the
allocations of consumers whose type counts, ``servers`` counts
``INSTANCE`` consumers. A change is refused only when it grows a resource
above its limit; one that shrinks or keeps usage passes even over a
limit (a limit lowered in Keystone must not trap a project).
"""

import collections

from allocworker.limit_names import CLASS_PREFIX  # noqa: F401
from allocworker.limit_names import SERVERS  # noqa: F401
from allocworker.limit_names import SERVERS_TYPE  # noqa: F401

Refusal = collections.namedtuple(
    'Refusal', ['resource', 'limit', 'usage', 'request'])


def counted(consumer_type, rows, counted_types):
    """{resource: amount} that a consumer of ``consumer_type`` holding
    ``rows`` ({(provider, class name): used}) counts."""
    found = {}
    if not rows:
        return found
    if consumer_type in counted_types:
        for (_provider, name), used in rows.items():
            resource = CLASS_PREFIX + name
            found[resource] = found.get(resource, 0) + used
    if consumer_type == SERVERS_TYPE:
        found[SERVERS] = 1
    return found


def refusal(limits, usage, delta):
    """The first (by resource name) limited resource that ``delta`` grows
    above its limit, as a Refusal, or None."""
    for resource in sorted(delta):
        grows = delta[resource]
        if grows <= 0 or resource not in limits:
            continue
        used = usage.get(resource, 0)
        if used + grows > limits[resource]:
            return Refusal(resource, limits[resource], used, grows)
    return None


def within(limits, usage, most):
    """True if ``usage`` grown by as much as ``most`` stays within every
    one of ``limits``: no change of at most ``most`` can be refused."""
    # A loop, not all() over a generator: asked for every project of a
    # transaction (100 for a 100-item batch), the generator cost twice.
    for resource, limit in limits.items():
        if usage.get(resource, 0) + most.get(resource, 0) > limit:
            return False
    return True


def over(limits, before, after):
    """Limited resources whose usage grows from ``before`` to ``after``
    and ends above the limit."""
    return {resource for resource, limit in limits.items()
            if after.get(resource, 0) > before.get(resource, 0) and
            after.get(resource, 0) > limit}
