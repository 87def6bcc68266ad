"""The codes of design §6 and the one envelope every call answers with.

Errors are data: a ``Code`` is a (status, code) pair, a ``Fault`` carries one
with a detail sentence and any extra fields the item must show (the current
generation on a conflict, for example). Nothing else lives here.
"""

import collections

Code = collections.namedtuple('Code', ['status', 'code'])

INVALID_REQUEST = Code(400, 'invalid_request')
RESOURCE_CLASS_NOT_FOUND = Code(400, 'resource_class.not_found')
PROVIDER_NOT_IN_BODY = Code(400, 'provider.not_found')
TRAIT_NOT_IN_BODY = Code(400, 'trait.not_found')
GROUP_NOT_IN_BODY = Code(400, 'group.not_found')
TOPOLOGY_NOT_IN_BODY = Code(400, 'topology.not_found')
FORBIDDEN = Code(403, 'forbidden')
CONSUMER_NOT_FOUND = Code(404, 'consumer.not_found')
PROVIDER_NOT_FOUND = Code(404, 'provider.not_found')
GROUP_NOT_FOUND = Code(404, 'group.not_found')
TOPOLOGY_NOT_FOUND = Code(404, 'topology.not_found')
TRAIT_NOT_FOUND = Code(404, 'trait.not_found')
RESOURCE_CLASS_NOT_FOUND_404 = Code(404, 'resource_class.not_found')
EVENT_TIMEOUT = Code(408, 'event.timeout')
CONSUMER_GENERATION_CONFLICT = Code(409, 'consumer.generation_conflict')
PROVIDER_GENERATION_CONFLICT = Code(409, 'provider.generation_conflict')
PROVIDER_CONCURRENT_UPDATE = Code(409, 'provider.concurrent_update')
CAPACITY_EXCEEDED = Code(409, 'capacity.exceeded')
INVENTORY_NOT_FOUND = Code(409, 'inventory.not_found')
ALLOCATION_UNIT_VIOLATION = Code(409, 'allocation.unit_violation')
INVENTORY_IN_USE = Code(409, 'inventory.in_use')
PROVIDER_IN_USE = Code(409, 'provider.in_use')
PROVIDER_EXISTS = Code(409, 'provider.exists')
GROUP_POLICY_VIOLATION = Code(409, 'group.policy_violation')
GROUP_EXISTS = Code(409, 'group.exists')
GROUP_GENERATION_CONFLICT = Code(409, 'group.generation_conflict')
TOPOLOGY_AMBIGUOUS_DOMAIN = Code(409, 'topology.ambiguous_domain')
TOPOLOGY_IN_USE = Code(409, 'topology.in_use')
PARTITION_MISMATCH = Code(409, 'partition.mismatch')
QUOTA_EXCEEDED = Code(403, 'quota.exceeded')
TRAIT_IN_USE = Code(409, 'trait.in_use')
RESOURCE_CLASS_IN_USE = Code(409, 'resource_class.in_use')
RESOURCE_CLASS_EXISTS = Code(409, 'resource_class.exists')
IDEMPOTENCY_KEY_REUSED = Code(409, 'idempotency.key_reused')
BATCH_ABORTED = Code(424, 'batch.aborted')
EVENT_HELD = Code(202, 'event.held')
INTERNAL_ERROR = Code(500, 'internal_error')

ALL = tuple(v for v in list(globals().values()) if isinstance(v, Code))


class Fault(Exception):
    """A caller-visible failure of one item (or of a whole request)."""

    def __init__(self, code, detail, **fields):
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.fields = fields

    def item(self, **identity):
        """The failed item: identity fields, then status, code and detail."""
        result = dict(identity)
        result.update(self.fields)
        result.update(status=self.code.status, code=self.code.code,
                      detail=self.detail)
        return result


def unexpected(request_id):
    """The fault of an item that failed for a reason nobody foresaw."""
    return Fault(INTERNAL_ERROR, 'unexpected error, nothing was written; '
                 'the worker log has request %s' % request_id)


def envelope(request_id, items):
    """The answer to a call: 200 when every item is 200, else 207."""
    status = 200 if all(i['status'] == 200 for i in items) else 207
    return {'status': status, 'request_id': request_id, 'items': items}


def request_error(request_id, fault):
    """The answer to a call that is malformed (or refused) as a whole."""
    return {'status': fault.code.status, 'request_id': request_id,
            'code': fault.code.code, 'detail': fault.detail, 'items': []}
