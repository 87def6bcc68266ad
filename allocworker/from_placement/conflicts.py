"""What ``placement import --partition P`` refuses before it writes:
uuids of Placement's providers and consumers that allocworker already
holds in another partition. Names are per partition, so two
deployments' ``compute-01`` live side by side; a uuid names one object
across every partition (the books' keys, and Nova's instance uuids, are
global), so such a uuid is one of the two deployments' mistake, or
the same Placement imported twice, and not for the import to settle.
"""

from allocworker.db.placement import placement_scope as scope
from allocworker.db.placement import placement_source as source
from allocworker.from_placement import importer
from allocworker.from_placement import report as reporting

# Conflicting uuids a refusal names (it counts them all).
SHOWN = 5


def first_pass(src, conn, partition):
    """Refused when any of Placement's providers or consumers lies in
    another partition here. Consumers are read a page of uuids at a
    time, and only while some consumer here lives outside
    ``partition`` (otherwise none can conflict)."""
    providers(conn, source.provider_uuids(src), partition)
    if scope.consumers_elsewhere(conn, partition):
        consumers(conn, source.consumer_uuid_pages(src, importer.PAGE),
                  partition)


def providers(conn, uuids, partition):
    taken = scope.foreign_providers(conn, uuids, partition)
    if taken:
        raise reporting.Refused(
            "%d of Placement's providers already lie in another partition "
            "of allocworker: %s. A provider uuid names one provider in "
            "every partition (was this Placement imported into another "
            "partition already?); nothing was written" % (
                len(taken), _listed({u: '%s, named %s' % (p, n)
                                     for u, (p, n) in taken.items()})))


def consumers(conn, uuid_pages, partition):
    """Refused when any uuid of ``uuid_pages`` (lists of Placement's
    consumer uuids) is a consumer here living outside ``partition``."""
    count, shown = 0, {}
    for page in uuid_pages:
        taken = scope.foreign_consumers(conn, page, partition)
        count += len(taken)
        for uuid in sorted(taken)[:SHOWN - len(shown)]:
            shown[uuid] = taken[uuid] or 'in no one partition'
    if count:
        raise reporting.Refused(
            "%d of Placement's consumers already live in another partition "
            "of allocworker: %s. A consumer lives in one partition, and "
            "its uuid names it in every one; remove it from one side, or "
            "import into the partition it lives in; nothing was written"
            % (count, _listed(shown, count)))


def _listed(found, count=None):
    """``uuid (detail)`` of the first SHOWN, and how many more."""
    uuids = sorted(found)[:SHOWN]
    text = ', '.join('%s (%s)' % (u, found[u]) for u in uuids)
    more = (count if count is not None else len(found)) - len(uuids)
    return text + (' and %d more' % more if more > 0 else '')
