"""The audit trail: one structured line per committed item of a write.

Lines go to the ``allocworker.audit`` logger at info (route it with
oslo.log's logging configuration). A call's lines travel in one log
record, joined by newlines: the record's prefix (time, process, request)
heads the first line, and every line carries every field of its item
(request id, claimed identity, the caller's global request id, call,
subject, status, code), so ``grep 'audit request_id='`` finds one
self-contained line per committed item. One record per call rather
than per item because a record costs the formatter and the file
handler's stat, write and flush each time, more than the rest of a
batched item's bookkeeping. Denied items are
logged at warning by ``allocworker.policy``.
"""

import logging as std_logging

from oslo_log import log as logging

LOG = logging.getLogger('allocworker.audit')

WRITES = frozenset([
    'allocate', 'claim', 'external_event', 'create_provider',
    'delete_provider',
    'set_inventories', 'create_resource_class', 'create_group',
    'delete_group', 'add_members', 'remove_members',
])
_SUBJECT_KEYS = ('consumer_uuid', 'uuid', 'provider_uuid', 'name')


def _one_line(value):
    """``value``, shown with repr() if it would break its line (a caller
    claims its own identity, so it could otherwise forge audit lines)."""
    if isinstance(value, str) and ('\n' in value or '\r' in value):
        return repr(value)
    return value


def lines(context, call, items):
    """The audit lines of ``call``'s committed (2xx) items, in order."""
    head = ('audit request_id=%s user_id=%s project_id=%s roles=%s '
            'global_request_id=%s call=%s') % (
        _one_line(getattr(context, 'request_id', None)),
        _one_line(getattr(context, 'user_id', None)),
        _one_line(getattr(context, 'project_id', None)),
        _one_line(','.join(getattr(context, 'roles', None) or [])),
        _one_line(getattr(context, 'global_request_id', None)), call)
    result = []
    for item in items:
        status = item.get('status', 500)
        if not 200 <= status < 300:
            continue
        subject = None
        for key in _SUBJECT_KEYS:
            if item.get(key):
                subject = _one_line(item[key])
                break
        code = item.get('code')
        result.append('%s subject=%s status=%s%s' % (
            head, subject, status, ' code=%s' % code if code else ''))
    return result


def record(context, call, items):
    """Log the lines of a write call's committed items, in one record."""
    if call not in WRITES or not LOG.isEnabledFor(std_logging.INFO):
        return
    found = lines(context, call, items)
    if found:
        # '%s' keeps a '%' in a caller's value from being read as a format.
        LOG.info('%s', '\n'.join(found))
