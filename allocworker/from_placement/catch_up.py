"""``allocworker-manage placement import --catch-up``: what Placement
changed since the previous pass, so writes stop only for the last one.

Consumers (the many) are read by Placement's own ``updated_at`` /
``created_at`` from a little before the newest timestamp the previous
pass copied (``overlap_seconds``: a Placement transaction that stamped
its rows before that pass read but committed after it, or an API host's
clock a little behind). Consumers gone from Placement are found by
absence. Providers, inventories, traits and aggregates (the few) are
compared whole: Placement changes aggregates at microversions before
1.19 without touching the provider's timestamp.

Everything is read and written within the pass's partition: the mark,
the providers and consumers found by absence, and those compared, are
that partition's alone, so a catch-up of one deployment never removes
or changes another's.
"""

import datetime

from allocworker.db.placement import placement_scope as scope
from allocworker.db.placement import placement_source as source
from allocworker.db.placement import placement_target as target
from allocworker.from_placement import conflicts
from allocworker.from_placement import importer
from allocworker.from_placement import report as reporting
from allocworker.from_placement import rules


def run(src, conn, report, progress, overlap_seconds, partition):
    latest = scope.last_change(conn, partition)
    if latest is None:
        raise reporting.Refused(
            'partition %s holds nothing imported yet: run "allocworker-'
            'manage placement import" without --catch-up first' % partition)
    since = latest - datetime.timedelta(seconds=overlap_seconds)
    report.since = since
    in_source = source.consumer_uuids(src)
    held_uuids = scope.consumer_uuids(conn, partition)
    # Only consumers the partition does not hold can live elsewhere:
    # checked before the first write, in one read for the usual few.
    conflicts.providers(conn, source.provider_uuids(src), partition)
    conflicts.consumers(conn, importer.pages(in_source - held_uuids),
                        partition)
    class_of, class_ids, trait_ids = importer.names(src, conn, report)
    ids, changed = copy_providers(src, conn, report, partition)
    inventories = importer.copy_inventories(src, conn, report, class_of,
                                            class_ids, ids, changed)
    importer.copy_facets(src, conn, report, ids, trait_ids, partition)
    usage = {}
    seen = set()
    total = source.changed_consumers(src, since)
    for page in source.consumer_pages(src, importer.PAGE, since):
        catch_up_consumers(src, conn, report, page, class_of, class_ids,
                           ids, inventories, usage, seen, partition)
        progress.show('consumers', len(seen), total)
    for uuids in importer.pages(sorted(in_source - held_uuids - seen)):
        catch_up_consumers(src, conn, report,
                           source.consumers_named(src, uuids), class_of,
                           class_ids, ids, inventories, usage, seen,
                           partition)
    gone = sorted(held_uuids - in_source)
    for page in importer.pages(gone):
        importer.remove(conn, report, usage, list(
            target.consumers(conn, page, partition).values()))
    target.add_usage(conn, usage)
    remove_providers(src, conn, report, partition)
    touched = {p for p, _c in usage} | {ids[u] for u in changed}
    importer.flag_over_capacity(conn, report, touched)


def catch_up_consumers(src, conn, report, page, class_of, class_ids, ids,
                       inventories, usage, seen, partition):
    held = target.consumers(conn, [row[1] for row in page], partition)
    importer.copy_consumers(src, conn, report, page, class_of, class_ids,
                            ids, inventories, usage, held)
    seen.update(row[1] for row in page)


def copy_providers(src, conn, report, partition):
    """Providers new or changed in Placement written into ``partition``;
    ({uuid: id} of every provider of it carried over, {uuid} of those
    new or changed)."""
    held = target.providers(conn, partition)
    new, updated, links = [], [], {}
    for uuid, name, generation, parent, root, created, updated_at in \
            source.providers(src):
        name, issues = rules.provider(uuid, name)
        if name is None:
            report.add(issues)
            continue
        before = held.get(uuid)
        if before is not None and before[1:] == (name, generation, parent,
                                                 root or uuid):
            continue
        report.add(issues)
        row = (name, generation, created, updated_at)
        if before is None:
            new.append((uuid,) + row)
        else:
            updated.append((before[0],) + row)
        links[uuid] = (parent, root)
    target.insert_providers(conn, new, partition)
    target.update_providers(conn, updated)
    ids = target.provider_ids(conn, partition)
    target.link_providers(conn, [
        (ids[u], ids.get(parent), ids.get(root, ids[u]))
        for u, (parent, root) in links.items()])
    report.count('providers', len(new) + len(updated))
    return ids, set(links)


def remove_providers(src, conn, report, partition):
    """``partition``'s providers gone from Placement removed (their
    consumers are gone already: Placement refuses to delete a provider
    with allocations)."""
    in_source = source.provider_uuids(src)
    doomed = {u: (i, g) for u, (i, _n, g, _p, _r) in
              target.providers(conn, partition).items()
              if u not in in_source}
    target.delete_providers(conn, doomed)
    report.count('providers_removed', len(doomed))
