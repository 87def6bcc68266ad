"""Partitions (RPC 1.6, design §3 "Partitions"), as pure rules.

Every provider lies in one partition; a consumer lives in the one
partition its allocations' providers lie in, ``shared`` aside (storage
pools and sharing providers serve every partition). Beneath the service
layer, as ``capacity.py`` is, so that providers, allocations and
scheduling judge by one rule without reaching into each other.
"""

import re

from allocworker import codes
from allocworker import validation

DEFAULT = 'default'
SHARED = 'shared'
NAME = re.compile(r'^[a-z0-9][a-z0-9_.-]{0,63}$')
# The topology level whose domains are the partitions (group rules,
# design §3): a root's domain there is its partition, read from its own
# row; no aggregate maps to it.
LEVEL = 'partition'


def parse(value, field):
    """A partition name as given, or the 400 naming ``field``."""
    # fullmatch: the design's ``$`` would let a trailing newline through.
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise validation.invalid(
            '%s must be a partition name: 1 to 64 lower-case letters, '
            'digits, "_", "." or "-", starting with a letter or digit, '
            'not %s' % (field, _show(value)))
    return value


def _show(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + '...'


def optional(value, field):
    return None if value is None else parse(value, field)


def of_child(given, parent_partition, parent_uuid):
    """A new child's partition: its parent's, which ``given`` may repeat
    but not contradict (a tree lies in one partition: a 400)."""
    if given not in (None, parent_partition):
        raise validation.invalid(
            'partition %s: a child lies in its parent\'s partition, and '
            'parent_uuid %s lies in %s' % (given, parent_uuid,
                                           parent_partition))
    return parent_partition


def domain(partition):
    """A root's label at level ``partition``: its partition, or None for
    ``shared``, which is no domain: its roots serve every partition, so
    a member holding one beside a root of its own partition is judged
    by that one alone (the root is set aside, not refused)."""
    return None if partition == SHARED else partition


def lives_in(found):
    """The partition a consumer whose providers lie in the partitions
    ``found`` (a set) lives in: the one that is not ``shared``, else
    ``shared``; None without providers, and None when they lie in
    several (``apart`` names them: such an item is refused)."""
    own = found - {SHARED}
    if len(own) == 1:
        return next(iter(own))
    if not own:
        return SHARED if found else None
    return None


def apart(found):
    """The partitions, ``shared`` aside, that keep providers lying in
    ``found`` from one consumer (sorted; empty when nothing does)."""
    own = sorted(found - {SHARED})
    return own if len(own) > 1 else []


def mismatch(where, by_partition):
    """The 409 of an item whose providers lie in several partitions:
    ``by_partition`` is {partition: a provider uuid lying there} of the
    partitions ``apart`` names."""
    named = ', '.join('%s (provider %s)' % (p, by_partition[p])
                      for p in sorted(by_partition))
    return codes.Fault(
        codes.PARTITION_MISMATCH,
        '%s.allocations: its providers lie in partitions %s; a consumer '
        'lives in one partition (providers of partition %r serve every '
        'one)' % (where, named, SHARED))
