"""One pass of ``allocworker-manage placement import``, checked before
it writes: the target must carry allocworker's schema (and no books,
for a first pass, unless ``force``), the source must be Placement 16's
schema. Either pass runs in one write transaction on the target, so
all of it lands or none (``dry_run`` rolls it back)."""

from allocworker.db import api as db
from allocworker.db import migration
from allocworker.db import placement_source as source
from allocworker.db import placement_target as target
from allocworker.from_placement import catch_up as catch_up_pass
from allocworker.from_placement import importer
from allocworker.from_placement import report as reporting


Refused = reporting.Refused


class _RolledBack(Exception):
    """Ends a dry run's transaction."""


def run(url, dry_run=False, force=False, catch_up=False,
        overlap_seconds=300, progress=None):
    """Import (or catch up) from the Placement database at ``url``;
    the Report. Raises Refused before writing anything when the source
    or the target is not what the pass needs."""
    progress = progress or reporting.Progress()
    report = reporting.Report('catch-up' if catch_up else 'import', dry_run)
    if migration.current() != migration.head():
        raise Refused('the target database is not at allocworker\'s newest '
                      'schema (%s): run "allocworker-manage db sync" first'
                      % (migration.current() or 'never synced'))
    try:
        with source.snapshot(url) as src:
            _check_source(src, url)
            try:
                with db.writer() as conn:
                    held = target.held_books(conn)
                    if catch_up:
                        catch_up_pass.run(src, conn, report, progress,
                                          overlap_seconds)
                    else:
                        _check_empty(conn, held, force)
                        importer.first_pass(src, conn, report, progress)
                    target.count_projects(conn)
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


def _check_empty(conn, held, force):
    if any(held.values()) and not force:
        raise Refused(
            'the target already holds %d providers and %d consumers: use '
            '--catch-up to bring it up to date with Placement, or --force '
            'to replace its books with Placement\'s'
            % (held['providers'], held['consumers']))
    if any(held.values()):
        target.clear_books(conn)
