"""The §6 table and the envelope builder."""

from allocworker import codes

DESIGN_TABLE = {
    (400, 'invalid_request'), (400, 'resource_class.not_found'),
    (400, 'provider.not_found'), (403, 'forbidden'),
    (404, 'consumer.not_found'), (404, 'provider.not_found'),
    (408, 'event.timeout'), (409, 'consumer.generation_conflict'),
    (409, 'provider.generation_conflict'),
    (409, 'provider.concurrent_update'), (409, 'capacity.exceeded'),
    (409, 'inventory.not_found'), (409, 'allocation.unit_violation'),
    (409, 'inventory.in_use'), (409, 'provider.in_use'),
    (409, 'provider.exists'), (409, 'group.policy_violation'),
    (409, 'group.exists'), (404, 'group.not_found'), (403, 'quota.exceeded'),
    (400, 'group.not_found'), (409, 'idempotency.key_reused'),
    (424, 'batch.aborted'), (202, 'event.held'), (500, 'internal_error'),
    # RPC 1.5
    (409, 'group.generation_conflict'), (409, 'topology.ambiguous_domain'),
    (409, 'topology.in_use'), (404, 'topology.not_found'),
    (400, 'topology.not_found'),
    # RPC 1.6
    (409, 'partition.mismatch'),
}


# Codes beyond §6, for what only the REST shim offers (Placement's traits,
# deleting and renaming resource classes); no RPC call answers with them.
# doc/decisions/README.md lists them.
EXTENSIONS = {
    (400, 'trait.not_found'), (404, 'trait.not_found'),
    (409, 'trait.in_use'), (404, 'resource_class.not_found'),
    (409, 'resource_class.in_use'), (409, 'resource_class.exists'),
}


def test_codes_are_exactly_the_design_table_and_its_extensions():
    assert set(codes.ALL) == DESIGN_TABLE | EXTENSIONS


def test_envelope_is_200_only_when_every_item_is():
    ok = {'status': 200}
    assert codes.envelope('req-1', [ok, ok])['status'] == 200
    assert codes.envelope('req-1', [])['status'] == 200
    held = codes.Fault(codes.EVENT_HELD, 'held').item()
    answer = codes.envelope('req-1', [ok, held])
    assert answer == {'status': 207, 'request_id': 'req-1',
                      'items': [ok, held]}


def test_fault_item_carries_identity_extra_fields_and_code():
    fault = codes.Fault(codes.CONSUMER_GENERATION_CONFLICT, 'stale',
                        consumer_generation=None)
    assert fault.item(consumer_uuid='c') == {
        'consumer_uuid': 'c', 'consumer_generation': None, 'status': 409,
        'code': 'consumer.generation_conflict', 'detail': 'stale'}


def test_request_error_has_empty_items():
    fault = codes.Fault(codes.INVALID_REQUEST, 'items must be a list')
    assert codes.request_error('req-2', fault) == {
        'status': 400, 'request_id': 'req-2', 'code': 'invalid_request',
        'detail': 'items must be a list', 'items': []}
