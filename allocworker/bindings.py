"""Which partitions a caller sees (design §3 "Partitions"): a service
user named in ``[partitions] bindings`` sees and writes its own
partition and ``shared`` only, whatever its roles; every other caller,
and the operator's in-process CLI (no context), sees every partition.

Reads leave out what a bound caller does not see, as a project's
consumers are left out (a provider or consumer of another partition is
not found); a write naming one is that item's 403 ``forbidden``.
"""

from oslo_log import log as logging

from allocworker import codes
from allocworker.conf import CONF
from allocworker import partitions

LOG = logging.getLogger(__name__)

# The bindings as last parsed: (the option's value, {user: partition}).
_parsed = [None, {}]


def _bound():
    """{user id: partition} of ``[partitions] bindings``; a binding to a
    name that is not a partition name is left out (and logged once): a
    mistyped binding must not bind its user to a partition no provider
    can lie in."""
    raw = CONF.partitions.bindings
    if raw is not _parsed[0]:
        found = {}
        for user, partition in (raw or {}).items():
            if partitions.NAME.fullmatch(partition or '') and \
                    partition != partitions.SHARED:
                found[user] = partition
            else:
                LOG.error('[partitions] bindings: %s:%s is not a binding '
                          'to a partition; the user is not bound',
                          user, partition)
        _parsed[:] = [raw, found]
    return _parsed[1]


def home(context):
    """The partition ``context``'s user is bound to, or None."""
    user = getattr(context, 'user_id', None)
    if user is None:
        return None
    return _bound().get(user)


def seen(context):
    """The partitions ``context`` sees: a frozenset for a bound caller,
    None for one that sees every partition."""
    bound = home(context)
    if bound is None:
        return None
    return frozenset((bound, partitions.SHARED))


def hides(view, partition):
    """Whether a caller seeing ``view`` (``seen``'s) does not see
    ``partition``."""
    return view is not None and partition not in view


def check_writable(view, partition, what):
    """The 403 when a caller seeing ``view`` writes ``what`` lying in
    ``partition``."""
    if hides(view, partition):
        raise codes.Fault(codes.FORBIDDEN, '%s lies in a partition this '
                          'caller is not bound to' % what)


def asked(context, requested, where):
    """The partitions a search for ``context`` covers: those it sees,
    narrowed to ``requested`` (a request's ``partitions``) when given;
    None for every partition. A bound caller naming a partition it does
    not see is refused."""
    view = seen(context)
    if requested is None:
        return view
    beyond = sorted(set(requested) - view) if view is not None else []
    if beyond:
        raise forbidden(context, '%s: partition(s) %s'
                        % (where, ', '.join(beyond)))
    return frozenset(requested)


def forbidden(context, what):
    """The 403 for a bound caller acting on ``what`` of a partition it
    does not see, logged for the audit trail."""
    LOG.warning('denied %s to user %s bound to partition %s (request %s)',
                what, getattr(context, 'user_id', None), home(context),
                getattr(context, 'request_id', None))
    return codes.Fault(codes.FORBIDDEN, '%s lies in a partition this '
                       'caller is not bound to' % what)
