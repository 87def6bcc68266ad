"""allocworker-manage placement ...: moving a cloud's books from
OpenStack Placement (import, catch-up, compare)."""

import json
import time
from wsgiref import util as wsgiref_util

from allocworker import books
from allocworker import codes
from allocworker import partitions
from allocworker.cmd import commands as cli
from allocworker.cmd import output
from allocworker.conf import CONF
from allocworker.from_placement import compare as comparing
from allocworker.from_placement import passes
from allocworker.from_placement import report as reporting


def placement_import():
    args = CONF.command
    try:
        report = passes.run(args.from_connection, dry_run=args.dry_run,
                            force=args.force, catch_up=args.catch_up,
                            overlap_seconds=args.overlap_seconds,
                            partition=args.partition)
    except reporting.Refused as exc:
        raise cli.CommandError(str(exc))
    summary = report.summary()
    started = time.monotonic()
    breaches = [] if args.dry_run else books.check()
    summary['audit'] = {'clean': not breaches,
                        'breaches': [b['invariant'] for b in breaches],
                        'seconds': round(time.monotonic() - started, 3)}
    if args.format == 'json':
        output.emit(summary, [], 'json')
    else:
        _print_summary(report, summary)
    if breaches:
        raise cli.CommandError('the audit found %d broken invariant(s) '
                               'after the import: %s' % (
                                   len(breaches), '; '.join(
                                       summary['audit']['breaches'])))


def _print_summary(report, summary):
    if report.issues:
        cli.emit([dict(i._asdict()) for i in report.issues],
                 ['kind', 'uuid', 'decision', 'detail'])
        print()
    cli.emit(report.rows(), ['what', 'count'])
    print()
    what = 'dry run of the %s (rolled back)' % summary['mode'] \
        if summary['dry_run'] else summary['mode']
    print('%s into partition %s: %.1f s, %s items/s%s; %d issue(s)%s' % (
        what, summary['partition'], summary['seconds'],
        summary['items_per_second'],
        ', changes since %s' % summary['since'] if summary['since'] else '',
        len(report.issues),
        '' if summary['dry_run'] else
        '; audit clean' if summary['audit']['clean'] else '; AUDIT BROKEN'))


def _own_books(token):
    """A fetch callable reading allocworker's books through the REST
    shim's application in this process (no server needed)."""
    # Imported here: the import and its catch-up (the cutover's write
    # pause) start without the shim.
    from allocworker.api import auth
    from allocworker.api.placement import router
    application = auth.noauth2(router.application)

    def fetch(path, version=comparing.VERSION):
        path, _q, query = path.partition('?')
        environ = {'REQUEST_METHOD': 'GET', 'PATH_INFO': path,
                   'QUERY_STRING': query, 'HTTP_X_AUTH_TOKEN': token,
                   'HTTP_ACCEPT': 'application/json',
                   'HTTP_OPENSTACK_API_VERSION': 'placement %s' % version}
        wsgiref_util.setup_testing_defaults(environ)
        answer = {}

        def start_response(status, headers, exc_info=None):
            answer['status'] = int(status.split()[0])
        body = b''.join(application(environ, start_response))
        return answer['status'], json.loads(body) if body else None
    fetch.name = "allocworker's books"
    return fetch


def _scope(partition):
    """{uuid} of ``partition``'s providers, or None for no partition.

    The second side, read as an admin who sees every partition, is
    scoped here by the partition's provider uuids (read from this
    command's database). Read through the shim with a bound service
    user's token (``--other-endpoint``, ``--other-token``), it shows only
    that partition already, and ``--partition`` is left out."""
    if partition is None:
        return None
    try:
        partitions.parse(partition, '--partition')
    except codes.Fault as fault:
        raise cli.CommandError(fault.detail)
    found = comparing.partition_providers(partition)
    if not found:
        raise cli.CommandError('partition %s holds no providers: nothing '
                               'to compare with' % partition)
    return found


def placement_compare():
    args = CONF.command
    first = comparing.http_fetch(args.endpoint, args.token)
    second = (comparing.http_fetch(args.other_endpoint, args.other_token)
              if args.other_endpoint else _own_books(args.other_token))
    only = _scope(args.partition)
    try:
        differences = comparing.compare(first, second, only)
    except comparing.Unreadable as exc:
        raise cli.CommandError(str(exc))
    if args.format == 'json':
        output.emit({'equal': not differences,
                     'differences': differences}, [], 'json')
    elif differences:
        cli.emit(differences, ['what', 'where', 'first', 'second'])
    else:
        print('the two endpoints agree')
    if differences:
        raise cli.CommandError('%d difference(s)' % len(differences))
