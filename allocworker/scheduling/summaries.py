"""The providers a listing of candidates shows (``provider_summaries``):
each provider of the trees the candidates use, with its capacity, usage
and traits, read in the listing's snapshot and not read again where the
search read it already (``search_reads.Kept``)."""

import collections

from allocworker import capacity
from allocworker.db.search import candidates as db_candidates
from allocworker.scheduling import search_reads

Summary = collections.namedtuple('Summary', ['uuid', 'parent_uuid',
                                             'root_uuid', 'resources',
                                             'traits'])


def of_listing(conn, found, nested, traits=True):
    """Every provider of the trees the candidates allocate from (only
    the providers used, when not ``nested``); without their traits
    unless ``traits``. What the search kept (``found.kept``, of a
    ``candidates._Listing``) is not read again."""
    used = {u for c in found for u in c.allocations}
    if not used:
        return {}
    kept = getattr(found, 'kept', None) or search_reads.Kept()
    nodes = _summarised(conn, used, nested, kept)
    uuids = {pid: n.uuid for d in (kept.nodes, nodes) for pid, n in d.items()}
    missing = {n.root_id for n in nodes.values()} | {
        n.parent_id for n in nodes.values() if n.parent_id}
    uuids.update({n.id: n.uuid for n in db_candidates.nodes(
        conn, (), missing - set(uuids)).values()})
    inventories = kept.lookup('inventories', set(nodes),
                              db_candidates.inventories, conn)
    traits = kept.lookup('traits', set(nodes), db_candidates.traits,
                         conn) if traits else {}
    return {node.uuid: Summary(
        node.uuid, uuids.get(node.parent_id), uuids[node.root_id],
        resources(inventories.get(pid, {})), list(traits.get(pid, ())))
        for pid, node in nodes.items()}


def _summarised(conn, used, nested, kept):
    """{id: Node} of those of ``used`` (uuids), or when ``nested`` of
    every provider of their trees: read unless ``kept`` holds them."""
    by_uuid = {n.uuid: n for n in kept.nodes.values() if n.uuid in used}
    if len(by_uuid) < len(used):
        by_uuid.update((n.uuid, n) for n in db_candidates.nodes_by_uuid(
            conn, used - set(by_uuid)))
    if not nested:
        return {n.id: n for n in by_uuid.values()}
    roots = {n.root_id for n in by_uuid.values()}
    nodes = {pid: n for pid, n in kept.nodes.items() if n.root_id in roots}
    nodes.update(db_candidates.nodes(conn, roots - kept.whole))
    return nodes


def resources(inventories):
    """A summary's resources: {class: {"capacity", "used"}} of one
    provider's {class: (Inventory, used)}."""
    return {name: {'capacity': int(capacity.capacity(inventory)),
                   'used': used}
            for name, (inventory, used) in inventories.items()}
