"""allocworker-manage audit and db refresh-room: the books checked, and
their counters set again."""

from allocworker import books
from allocworker.cmd import commands as cli
from allocworker.cmd import output
from allocworker.conf import CONF


def db_refresh_room():
    print('room left corrected on %d usage counter(s)' % books.refresh_room())
    print('project usage corrected on %d counter(s)'
          % books.refresh_projects())


def audit():
    """Check the books; exit 0 only when every invariant holds."""
    breaches = books.check(CONF.command.grace_seconds)
    if CONF.command.format == 'json':
        output.emit({'clean': not breaches, 'breaches': breaches}, [],
                    'json')
    elif not breaches:
        print('the books are clean: every invariant holds')
    for breach in breaches if CONF.command.format == 'table' else ():
        print('BREACH: %s (%d)' % (breach['invariant'], len(breach['rows'])))
        rows = breach['rows']
        cli.emit(rows, sorted(rows[0]))
        print()
    if breaches:
        raise cli.CommandError('%d invariant(s) broken'
                               % len(breaches))
