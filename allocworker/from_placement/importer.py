"""``allocworker-manage placement import``: a Placement 16 database's
books copied into allocworker's, in one write transaction (all of it
lands or none; ``--dry-run`` rolls it back), judged item by item by
``rules``. Placement's database is only read, in one snapshot.

Uuids, names, generations and Placement's timestamps are kept exactly;
classes and traits travel by name, projects and users by their
external ids, trees by uuid. Consumers stream a page at a time, so
memory grows with the providers only, never with the consumers.
"""

import itertools

from allocworker import capacity
from allocworker.db.catalog import resource_classes as db_classes
from allocworker.db.catalog import traits as db_traits
from allocworker.db.placement import placement_source as source
from allocworker.db.placement import placement_target as target
from allocworker.from_placement import rules

PAGE = 1000


def names(src, conn, report):
    """Classes and traits by name: (class name by Placement's id,
    {class name: allocworker id}, {trait name: allocworker id})."""
    by_placement_id = source.class_names(src)
    classes = sorted(set(by_placement_id.values()))
    traits = sorted(source.trait_names(src))
    for kind, found, ensure in (('resource class', classes, db_classes),
                                ('trait', traits, db_traits)):
        issues = [rules.catalogue_name(kind, n) for n in found]
        report.add(i for i in issues if i)
        good = [n for n, issue in zip(found, issues) if not issue]
        report.count('resource_classes' if kind == 'resource class'
                     else 'traits', len(ensure.ensure(conn, good)))
    return (by_placement_id, db_classes.ids_by_name(conn, classes),
            db_traits.ids_by_name(conn, traits))


def pages(rows, size=PAGE):
    rows = iter(rows)
    while True:
        page = list(itertools.islice(rows, size))
        if not page:
            return
        yield page


def first_pass(src, conn, report, progress, partition):
    """Everything of Placement's into ``partition`` (which holds
    nothing: checked, or cleared, by the caller)."""
    totals = source.counts(src)
    class_of, class_ids, trait_ids = names(src, conn, report)
    links = {}
    done = 0
    for page in pages(source.providers(src)):
        rows = []
        for uuid, name, generation, parent, root, created, updated in page:
            name, issues = rules.provider(uuid, name)
            report.add(issues)
            if name is not None:
                rows.append((uuid, name, generation, created, updated))
                links[uuid] = (parent, root)
        target.insert_providers(conn, rows, partition)
        report.count('providers', len(rows))
        done += len(page)
        progress.show('providers', done, totals['providers'])
    ids = target.provider_ids(conn, partition)
    target.link_providers(conn, [
        (ids[u], ids.get(parent), ids.get(root, ids[u]))
        for u, (parent, root) in links.items()])
    inventories = copy_inventories(src, conn, report, class_of, class_ids,
                                   ids)
    copy_facets(src, conn, report, ids, trait_ids, partition)
    usage = {}
    done = 0
    for page in source.consumer_pages(src, PAGE):
        copy_consumers(src, conn, report, page, class_of, class_ids, ids,
                       inventories, usage, {})
        done += len(page)
        progress.show('consumers', done, totals['consumers'])
    target.add_usage(conn, usage)
    flag_over_capacity(conn, report, partition=partition)
    for consumer_uuid, count in source.allocations_without_consumer(src):
        report.add([rules.Issue('consumer', consumer_uuid, '%d allocation '
                                'rows without a consumer record' % count,
                                rules.NOT_CARRIED)])


def copy_inventories(src, conn, report, class_of, class_ids, ids,
                     written=None):
    """Every provider's inventories judged; those of ``written`` (None:
    every provider) replaced by Placement's. {(provider_uuid, class
    name): Inventory} of every inventory carried over."""
    copied = {}
    rows = []
    for provider_uuid, class_id, *fields in source.inventories(src):
        name = class_of.get(class_id, 'unknown class id %s' % class_id)
        if provider_uuid not in ids:
            continue
        writes = written is None or provider_uuid in written
        if writes:
            inventory, issues = rules.inventory(provider_uuid, name, fields)
            report.add(issues)
        else:  # judged by the pass that wrote it
            inventory = capacity.Inventory(*fields)
        if inventory is None or name not in class_ids:
            continue
        copied[(provider_uuid, name)] = inventory
        if writes:
            rows.append((ids[provider_uuid], class_ids[name]) +
                        tuple(inventory))
    target.replace_inventories(
        conn, [ids[u] for u in written or ()], rows)
    report.count('inventories', len(rows))
    return copied


def copy_facets(src, conn, report, ids, trait_ids, partition):
    """Traits and aggregates of every provider of ``partition`` made
    Placement's (only the differences are written)."""
    wanted = {
        'traits': {(u, trait_ids[t]) for u, t in source.provider_traits(src)
                   if u in ids and t in trait_ids},
        'aggregates': {(u, a) for u, a in source.provider_aggregates(src)
                       if u in ids}}
    for kind, pairs in wanted.items():
        held = target.facet_pairs(conn, kind, partition)
        added = {(ids[u], v) for u, v in pairs - held}
        removed = {(ids[u], v) for u, v in held - pairs if u in ids}
        target.change_facets(conn, kind, added, removed)
        report.count('provider_' + kind, len(added))


def copy_consumers(src, conn, report, page, class_of, class_ids, ids,
                   inventories, usage, held):
    """One page of Placement's consumer rows judged and copied; ``held``
    {uuid: TargetConsumer} are replaced when they differ. Usage deltas
    accumulate in ``usage`` {(provider_id, class_id): delta}, the
    projects of what is written or removed in ``report``."""
    rows_of = {}
    for consumer_uuid, provider_uuid, class_id, used in \
            source.allocations_of(src, [c[1] for c in page]):
        key = (provider_uuid, class_of.get(class_id, str(class_id)))
        rows_of.setdefault(consumer_uuid, {})[key] = used
    new, changed, doomed, allocations = [], [], [], []
    for _id, uuid, generation, project, user, kind, created, updated in page:
        rows = rows_of.get(uuid, {})
        issues = rules.consumer(uuid, project, user, kind, rows,
                                inventories)
        report.add(issues)
        before = held.get(uuid)
        if not rules.carried(issues):
            if before is not None:
                doomed.append(before)
            continue
        keyed = {(p, class_ids[n]): used for (p, n), used in rows.items()}
        if before is not None and (
                before.generation, before.project_id, before.user_id,
                before.consumer_type, before.allocations) == (
                generation, project, user, kind, keyed):
            report.count('consumers_unchanged')
            continue
        row = (generation, project, user, kind, created, updated)
        report.touched(project)
        if before is None:
            new.append((uuid,) + row)
        else:
            changed.append((before.id,) + row)
            report.touched(before.project_id)
            doomed_rows(usage, before)
        allocations.append((uuid, keyed))
    remove(conn, report, usage, doomed)
    if changed:
        target.remove_allocation_rows(conn, [c[0] for c in changed])
    target.update_consumers(conn, changed)
    consumer_ids = target.insert_consumers(conn, new)
    consumer_ids.update((u, held[u].id) for u, _k in allocations
                        if u in held)
    rows = []
    for uuid, keyed in allocations:
        for (provider_uuid, class_id), used in keyed.items():
            provider_id = ids[provider_uuid]
            rows.append((consumer_ids[uuid], provider_id, class_id, used))
            usage[(provider_id, class_id)] = usage.get(
                (provider_id, class_id), 0) + used
    target.insert_allocations(conn, rows)
    report.count('consumers', len(new) + len(changed))
    report.count('allocations', len(rows))


def doomed_rows(usage, consumer):
    """What ``consumer``'s current rows count for, taken off ``usage``."""
    for (provider_uuid, class_id), used in consumer.allocations.items():
        key = (consumer.provider_ids[provider_uuid], class_id)
        usage[key] = usage.get(key, 0) - used


def remove(conn, report, usage, doomed):
    for consumer in doomed:
        doomed_rows(usage, consumer)
        report.touched(consumer.project_id)
    if doomed:
        target.remove_consumers(conn, doomed)
        report.count('consumers_removed', len(doomed))


def flag_over_capacity(conn, report, provider_ids=None, partition=None):
    """List what is over capacity among ``provider_ids`` (or
    ``partition``'s providers) and mark those inventories as knowingly
    below usage (design §2's forced change), so the audit accepts
    them."""
    found = target.over_capacity(conn, provider_ids, partition)
    target.mark_forced(conn, [(p, c) for p, _u, c, _n, _used, _r in found])
    report.add(rules.over_capacity(u, n, used, room)
               for _p, u, _c, n, used, room in found)
