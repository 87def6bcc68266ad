"""Claims of one transaction written together.

A claim's write is one set-based statement (``plan_writes``) that costs
the server nearly as much for one consumer as for thirty, and a claim
transaction shared by concurrent calls placed one consumer at a time:
that statement was most of a shared claim's database time. So when a
claim for a new consumer has been judged under its candidate's locks,
only the usage counters of its providers are moved at once (``hold``);
the rest of its write (the consumer, its allocation rows, its project's
counters, the providers' generations) is held back, and a transaction's
held-back claims go to the database as one write set (``flush``) before
it commits.

The usage counters are what every later read of the transaction judges
and weighs by: the capacity a claim is judged against (read under its
candidate's locks), the windows of roots a search reads, the room a
``spread`` claim sees left in a tree. Moving them at once keeps all of
those as they would be had the claim been written whole. What is held
back is read by nothing else in the transaction, as long as only these
claims are held back: for a new consumer that is in no group, or only
in groups its transaction locked and read at its start (their later
judgements read the members kept in memory, ``Judgement.keep``, not
the allocations), while project limits are off (a limit is judged on
the project's counters). A claim of any other kind is placed after a
``flush``. The held claims' new members join their groups in one
statement, each group's generation moved once. A provider's generation
moves once for all the claims the transaction placed on it, from the
generation they all read under its lock.
"""

import collections

from allocworker.db.ledger import allocations as db_allocations
from allocworker.groups import judgement as group_judgement
from allocworker.quota import limits as limit_source


class Staging(object):
    """The claims a transaction holds back."""

    def __init__(self, claims):
        """Of a transaction of ``claims`` claims: one alone is written
        whole (holding it back would only add a statement)."""
        self.enabled = claims > 1 and limit_source.source() is None
        self._held = []

    def hold(self, conn, plan):
        """Move the usage counters of ``plan`` (judged, one request, not
        written) and hold the rest of its write back: (its answer, [its
        payload]), both filled in by ``flush``."""
        writes = plan.write_set()
        db_allocations.move_usage(conn, writes.usage)
        answer, payload = {}, {}
        self._held.append((plan, writes._replace(usage={}), answer,
                           payload))
        return answer, [payload]

    def flush(self, conn):
        """Write what is held back, in one write set, and fill in the
        answers and payloads ``hold`` gave out."""
        if not self._held:
            return
        held = db_allocations.write_set(conn, merged(
            writes for _plan, writes, _answer, _payload in self._held))
        group_judgement.enroll(conn, [(plan.groups, plan.requests)
                                      for plan, _w, _a, _p in self._held])
        for plan, _writes, answer, payload in self._held:
            results, changes = plan.finish(held)
            filled = dict(results[plan.requests[0].index], **answer)
            answer.clear()
            answer.update(filled)
            payload.update(changes[0])
        self._held = []


def merged(write_sets):
    """One ``WriteSet`` doing what ``write_sets`` do (of one transaction,
    for distinct consumers, each provider's generation read under the
    same lock)."""
    into = db_allocations.WriteSet(
        [], [], [], [], [], collections.Counter(), {},
        collections.Counter(), collections.Counter())
    for writes in write_sets:
        for field in ('replaced', 'updated', 'created', 'emptied', 'rows'):
            getattr(into, field).extend(getattr(writes, field))
        for field in ('usage', 'project_usage', 'project_consumers',
                      'bumps'):
            getattr(into, field).update(getattr(writes, field))
    return into
