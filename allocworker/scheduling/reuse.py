"""One search for the claims of one transaction that ask the same thing
(Nova's ``--min-count``/``--max-count``: N new instances of one flavor,
in one call or in concurrent calls sharing a transaction).

The first such claim searches as any claim does; the window its
candidates came from is kept, and the next claim with the same request
and strategy tries those candidates first (see ``Searches.placed`` for
how the claims before it change them), without waiting for a lock: a
fresh search costs less than waiting for another transaction. Under
``spread`` only the window's roomiest candidates are kept. Only new
consumers with nothing to release share: a resize searches with its
own allocations released, which no other claim shares. Every try is
still judged under the locks by ``allocate``'s rules; when nothing kept
fits, the claim searches afresh, so sharing never makes a claim fail
while a candidate fits.
"""

import collections

from allocworker.scheduling import choosing


class Searches(object):
    """The windows kept for one call, by (request, strategy)."""

    def __init__(self):
        self._kept = {}

    @staticmethod
    def _key(claim):
        return repr(claim.wanted), claim.strategy

    def window(self, claim):
        """(candidates, {provider uuid: id}) kept for ``claim``'s request,
        or None."""
        return self._kept.get(self._key(claim))

    def keep(self, claim, window, answer):
        """Keep ``window`` for the items after ``claim``, whose ``answer``
        placed it from there."""
        candidates = window[0]
        if claim.strategy == choosing.SPREAD:
            # A root of the window already less roomy than its best may
            # be less roomy than roots outside it too (a host with one
            # NUMA node used still has a node as free as any, so it is
            # read with the window): the next item searches afresh
            # before it would go there.
            candidates = choosing.roomiest(candidates)
        self._kept[self._key(claim)] = (list(candidates), window[1])
        self.placed(claim, answer)

    def placed(self, claim, answer):
        """Count where ``answer`` placed ``claim`` in the kept window.

        Under ``spread`` the root it went to leaves the window: every
        root outside the window had no more room than the window's last,
        so a root that took an item may now have less than them, and the
        next item should not be judged without them (once the window is
        used up, the next item searches afresh). Under ``pack`` the root
        stays, its usage moved, so the next item fills it first.
        """
        window = self.window(claim)
        if window is None:
            return
        candidates = window[0]
        if claim.strategy == choosing.SPREAD:
            candidates[:] = [c for c in candidates
                             if c['root_uuid'] != answer['root_uuid']]
            return
        placed = collections.Counter()
        for resources in answer['allocations'].values():
            placed.update(resources)
        trees = {}
        for candidate in candidates:
            for uuid, summary in candidate['providers'].items():
                for name, amount in answer['allocations'].get(
                        uuid, {}).items():
                    summary['used'][name] = (summary['used'].get(name, 0) +
                                             amount)
            if candidate['root_uuid'] == answer['root_uuid']:
                tree = candidate.get('tree_free', {})
                trees[id(tree)] = tree
        # The candidates of one tree share its room (one mapping).
        for tree in trees.values():
            for name in tree:
                tree[name] -= placed[name]
