"""One pass of ``allocworker-manage placement import``, checked before
it writes: the target must carry allocworker's schema (and, for a first
pass, no books in the partition it imports into, unless ``force``), the
source must be Placement 16's schema, and none of Placement's uuids may
lie in another partition. Either pass runs in one write transaction on
the target, so all of it lands or none (``dry_run`` rolls it back), and
writes only the one partition's books (``placement_scope``)."""

from allocworker import codes
from allocworker.db import api as db
from allocworker.db import migration
from allocworker.db.placement import placement_scope as scope
from allocworker.db.placement import placement_source as source
from allocworker.db.placement import placement_target as target
from allocworker.from_placement import catch_up as catch_up_pass
from allocworker.from_placement import conflicts
from allocworker.from_placement import importer
from allocworker.from_placement import report as reporting
from allocworker import partitions


Refused = reporting.Refused


class _RolledBack(Exception):
    """Ends a dry run's transaction."""


def run(url, dry_run=False, force=False, catch_up=False,
        overlap_seconds=300, progress=None, partition=partitions.DEFAULT):
    """Import (or catch up) from the Placement database at ``url`` into
    ``partition``; the Report. Raises Refused before writing anything
    when the source or the target is not what the pass needs."""
    progress = progress or reporting.Progress()
    report = reporting.Report('catch-up' if catch_up else 'import', dry_run)
    try:
        partition = partitions.parse(partition, '--partition')
    except codes.Fault as fault:
        raise Refused(fault.detail)
    report.partition = partition
    if migration.current() != migration.head():
        raise Refused('the target database is not at allocworker\'s newest '
                      'schema (%s): run "allocworker-manage db sync" first'
                      % (migration.current() or 'never synced'))
    try:
        with source.snapshot(url) as src:
            _check_source(src, url)
            try:
                with db.writer() as conn:
                    _one_pass(src, conn, report, progress, partition,
                              force, catch_up, overlap_seconds)
                    if dry_run:
                        raise _RolledBack()
            except _RolledBack:
                pass
            else:
                target.analyze(db.get_engine())
    except source.Unreachable as exc:
        raise Refused('cannot read the Placement database %s: %s'
                      % (_safe(url), exc))
    finally:
        progress.end()
    return report


def _one_pass(src, conn, report, progress, partition, force, catch_up,
              overlap_seconds):
    """The pass in the caller's transaction, then the project counters
    of every project whose consumers it wrote or removed set from the
    books (``report.projects``)."""
    if catch_up:
        if partition == partitions.SHARED:
            _check_no_strangers(conn, partition)
        catch_up_pass.run(src, conn, report, progress, overlap_seconds,
                          partition)
    else:
        held = scope.held(conn, partition)
        _check_empty(held, force, partition)
        if partition == partitions.SHARED and any(held.values()):
            _check_no_strangers(conn, partition)
        conflicts.first_pass(src, conn, partition)
        if any(held.values()):
            report.projects |= scope.projects(conn, partition)
            scope.clear(conn, partition)
        importer.first_pass(src, conn, report, progress, partition)
    target.count_projects(conn, report.projects)
    target.forget_kept(conn)


def _safe(url):
    """The URL without its password, for messages."""
    head, sep, tail = url.rpartition('@')
    if not sep or '://' not in head:
        return url
    scheme, _s, credentials = head.partition('://')
    return '%s://%s@%s' % (scheme, credentials.split(':')[0], tail)


def _check_source(src, url):
    found = source.revision(src)
    if found is None:
        raise Refused('%s holds no alembic_version table: it is not a '
                      'Placement database synced by placement-manage'
                      % _safe(url))
    if found != source.PLACEMENT_16_REVISION:
        raise Refused(
            'the Placement database is at schema revision %s; this import '
            'reads Placement 16.0.0 (revision %s): upgrade Placement to '
            '16.0.0 and run "placement-manage db sync" first'
            % (found, source.PLACEMENT_16_REVISION))


def _check_empty(held, force, partition):
    if any(held.values()) and not force:
        raise Refused(
            'the target already holds %d providers and %d consumers in '
            'partition %s: use --catch-up to bring it up to date with '
            'Placement, or --force to replace its books with Placement\'s '
            '(other partitions are left as they are)'
            % (held['providers'], held['consumers'], partition))


def _check_no_strangers(conn, partition):
    """A pass that changes or replaces ``shared``'s providers must not
    pull allocations of other partitions' consumers from under them
    (another partition's providers hold only its own consumers')."""
    found = scope.strangers(conn, partition)
    if found:
        raise Refused(
            'providers of partition %s hold allocations of %d consumers '
            'living in other partitions: a pass into %s would change books '
            'that are no longer only this Placement\'s; nothing was written'
            % (partition, found, partition))
