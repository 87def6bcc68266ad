"""Every provider with its inventories, usage, traits and aggregates,
read in one transaction: what allocation candidates and provider searches
judge. A snapshot is advice; writes judge again under their locks."""

from allocworker.allocations import capacity
from allocworker.db import aggregates as db_aggregates
from allocworker.db import api as db
from allocworker.db import providers as db_providers
from allocworker.db import traits as db_traits

SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'


def read():
    with db.reader() as conn:
        return Snapshot(conn)


class Snapshot(object):
    """Every provider with its inventories, usage, traits and aggregates."""

    def __init__(self, conn):
        described = db_providers.describe(conn)
        self.providers = {p.uuid: p for p, _classes in described}
        self.classes = {p.uuid: classes for p, classes in described}
        by_id = {p.id: p.uuid for p in self.providers.values()}
        self.traits = {by_id[pid]: names for pid, names in
                       db_traits.of_providers(conn).items() if pid in by_id}
        self.aggregates = {by_id[pid]: aggs for pid, aggs in
                           db_aggregates.of_providers(conn).items()
                           if pid in by_id}
        self.trees = {}
        for p in self.providers.values():
            self.trees.setdefault(p.root_uuid, []).append(p.uuid)

    def can_supply(self, uuid, name, amount):
        found = self.classes[uuid].get(name)
        if found is None:
            return False
        inventory, used = found
        return (capacity.unit_violation(inventory, amount) is None and
                capacity.fits(inventory, used + amount))

    def aggregates_of(self, tree):
        """Every aggregate any provider of ``tree`` is in."""
        return set().union(*(self.aggregates.get(u, set()) for u in tree))

    def sharing_with(self, tree, aggregates):
        """Sharing providers outside ``tree`` in one of ``aggregates``
        (the tree's, from ``aggregates_of``)."""
        return [u for u in self.providers if u not in tree and
                SHARING_TRAIT in self.traits.get(u, ()) and
                self.aggregates.get(u, set()) & aggregates]

    def summary(self, uuid):
        provider = self.providers[uuid]
        return {'resources': {
                    name: {'capacity': int(capacity.capacity(inv)),
                           'used': used}
                    for name, (inv, used) in self.classes[uuid].items()},
                'traits': sorted(self.traits.get(uuid, ())),
                'parent_uuid': provider.parent_uuid,
                'root_uuid': provider.root_uuid}
