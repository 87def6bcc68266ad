"""The audit trail: one structured log line per committed write.

Lines go to the ``allocworker.audit`` logger (route it with oslo.log's
logging configuration). Denied items are logged at warning by
``allocworker.policy``.
"""

from oslo_log import log as logging

LOG = logging.getLogger('allocworker.audit')

WRITES = frozenset([
    'allocate', 'claim', 'external_event', 'create_provider',
    'delete_provider',
    'set_inventories', 'create_resource_class', 'create_group',
    'delete_group', 'add_members', 'remove_members',
])
_SUBJECT_KEYS = ('consumer_uuid', 'uuid', 'provider_uuid', 'name')


def record(context, call, items):
    """Log each item of a write call that committed (2xx)."""
    if call not in WRITES:
        return
    for item in items:
        if not 200 <= item.get('status', 500) < 300:
            continue
        subject = next((item[k] for k in _SUBJECT_KEYS if item.get(k)), None)
        LOG.info('audit request_id=%s user_id=%s project_id=%s roles=%s '
                 'call=%s subject=%s status=%s%s',
                 getattr(context, 'request_id', None),
                 getattr(context, 'user_id', None),
                 getattr(context, 'project_id', None),
                 ','.join(getattr(context, 'roles', None) or []), call,
                 subject, item['status'],
                 ' code=%s' % item['code'] if item.get('code') else '')
