"""What a candidate search read of the trees it searched (``Kept``):
their providers, and per kind the facts read of some of them, so a
listing's summaries (``summaries.py``) read nothing twice."""


class Kept(object):
    """What a search read: ``nodes`` {id: Node} (every provider of the
    trees of the root ids in ``whole``), and per kind ``facts[kind]`` {id:
    traits [names], inventories {class: (Inventory, used)}, or sharing
    True} of the ids in ``read[kind]`` (those without one are absent)."""

    KINDS = ('traits', 'inventories', 'sharing')

    def __init__(self):
        self.nodes, self.whole = {}, set()
        self.facts = {kind: {} for kind in self.KINDS}
        self.read = {kind: set() for kind in self.KINDS}

    def lookup(self, kind, ids, read, *args):
        """{id: fact} of ``ids`` that have the fact: kept, or read by
        ``read(*args, missing ids)`` (then kept too)."""
        missing = set(ids) - self.read[kind]
        if missing:
            self.add(kind, missing, read(*args, missing))
        facts = self.facts[kind]
        return {i: facts[i] for i in ids if i in facts}

    def add(self, kind, ids, facts):
        """``facts`` {id: fact} read of ``ids``."""
        self.read[kind].update(ids)
        self.facts[kind].update(facts)

    def keep(self, other, roots):
        """Add what ``other`` read of the trees of ``roots``."""
        ids = {pid for pid, n in other.nodes.items() if n.root_id in roots}
        self.nodes.update((pid, other.nodes[pid]) for pid in ids)
        self.whole |= other.whole & roots
        for kind in self.KINDS:
            self.read[kind] |= other.read[kind] & ids
            self.facts[kind].update(
                (i, f) for i, f in other.facts[kind].items() if i in ids)
