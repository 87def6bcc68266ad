"""How the service layer turns work into result items.

Small shared steps: parse every entry of a list keeping its fault in
place, answer a call about one object with exactly one item, echo what a
caller sent back into its item.
"""

from oslo_log import log as logging

from allocworker import codes
from allocworker import validation

LOG = logging.getLogger(__name__)


def echo(value):
    """A value the caller sent, fit to be echoed (strings only)."""
    return value if isinstance(value, str) else None


def echo_fields(raw, *fields):
    """{field: echo(raw[field])} of a caller's object (None if not one)."""
    source = raw if isinstance(raw, dict) else {}
    return {f: echo(source.get(f)) for f in fields}


def each(values, parse, field):
    """``parse(value, index)`` of every entry, or the Fault it raised, in
    order, so one bad entry fails only its own item."""
    result = []
    for index, value in enumerate(values):
        try:
            result.append(parse(value, index))
        except codes.Fault as fault:
            result.append(fault)
    return result


def each_uuid(values, field):
    return each(values, lambda value, index: validation.uuid(
        value, '%s[%d]' % (field, index)), field)


def valid(parsed):
    """The entries of ``each`` that parsed."""
    return [p for p in parsed if not isinstance(p, codes.Fault)]


def one(context, identity, fn, *args):
    """A call about one object answers with exactly one item: ``fn``'s,
    its fault's, or a 500 for what nobody foresaw."""
    try:
        return [fn(*args)]
    except codes.Fault as fault:
        return [fault.item(**identity)]
    except Exception:
        request_id = getattr(context, 'request_id', None)
        LOG.exception('%s failed unexpectedly (request %s)', fn.__name__,
                      request_id)
        return [codes.unexpected(request_id).item(**identity)]
