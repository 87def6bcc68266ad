"""``/allocations``: a consumer's allocations (GET, PUT, DELETE), several
consumers at once (POST, 1.13), and a provider's allocations.

Placement's differences from the RPC contract are mapped here, not in the
service layer: an unknown consumer reads as ``{"allocations": {}}``;
before 1.28 a write carries no consumer generation, so the shim reads the
current one and writes under it (retrying when a concurrent writer moved
it); before 1.8 a consumer may come without project and user, and gets
Placement's "incomplete consumer" id for both; before 1.38 a new consumer
records no type, and reads back at 1.38 as ``unknown``.
"""

import uuid as uuidlib

import tenacity

from allocworker.api.placement import faults
from allocworker.api.placement import http
from allocworker.api.placement import providers as rp
from allocworker.api.placement import schemas
from allocworker.allocations import writes as allocations
from allocworker import codes
from allocworker.allocations import consumers

INCOMPLETE_CONSUMER_ID = '00000000-0000-0000-0000-000000000000'
# How each writing handler words a class that does not exist.
UNKNOWN_CLASS_PUT = ('Unable to allocate inventory for consumer '
                     '%(consumer)s: No such resource class '
                     '%(resource_class)s.')
UNKNOWN_CLASS_POST = ('Unable to allocate inventory No such resource class '
                      '%(resource_class)s.')
UNKNOWN_TYPE = 'unknown'
# Writes before 1.28 read the consumer generation, then write under it.
READ_WRITE_ATTEMPTS = 5


def _raced(answers):
    return any(a.get('code') == codes.CONSUMER_GENERATION_CONFLICT.code
               for a in answers)


# A write under a generation it read itself, read and written again when a
# concurrent writer moved that generation in between, at once: the other
# writer committed, so the next read sees a settled generation. The last
# attempt's answers stand, conflict or not (Placement's 409).
UNTIL_UNRACED = tenacity.Retrying(
    retry=tenacity.retry_if_result(_raced),
    stop=tenacity.stop_after_attempt(READ_WRITE_ATTEMPTS),
    retry_error_callback=lambda state: state.outcome.result())


def consumer(value):
    try:
        return str(uuidlib.UUID(value))
    except ValueError:
        raise http.bad_request('Malformed consumer_uuid: %s' % value)


def _read(request, uuids):
    """{uuid: the get_allocations item (status 200 or 404)}."""
    found = faults.call(consumers.get_allocations, request.context,
                        list(uuids))
    return {uuid: faults.checked(item) if item['status'] != 404 else item
            for uuid, item in zip(uuids, found)}


def _representation(request, item):
    body = {'allocations': {}}
    if item['status'] == 404:
        return body
    body['allocations'] = item['allocations']
    if request.at_least(12):
        body['project_id'] = item['project_id']
        body['user_id'] = item['user_id']
    if request.at_least(28):
        body['consumer_generation'] = item['consumer_generation']
    if request.at_least(38):
        body['consumer_type'] = item['consumer_type'] or UNKNOWN_TYPE
    return body


def show(request, consumer_uuid):
    # Placement reads whatever string it is given: a malformed uuid holds
    # nothing, and a DELETE of it is a 404; only writes refuse it (400).
    if not http.is_uuid(consumer_uuid):
        return http.Response(body={'allocations': {}}, cacheable=True)
    uuid = consumer(consumer_uuid)
    item = _read(request, [uuid])[uuid]
    return http.Response(body=_representation(request, item),
                         cacheable=True)


def of_provider(request, uuid):
    provider = rp.fetch(request, uuid, faults.MISSING_ALLOCATIONS)
    held = faults.call(consumers.list_allocations, request.context, uuid)
    allocations = {}
    for found in held:
        if found['status'] != 200:
            continue
        entry = allocations[found['consumer_uuid']] = {
            'resources': found['resources']}
        # Only the generation from 1.28: project and user are not shown
        # here at any microversion.
        if request.at_least(28):
            entry['consumer_generation'] = found['consumer_generation']
    return http.Response(body={
        'resource_provider_generation': provider['generation'],
        'allocations': allocations}, cacheable=True)


# -- writes ----------------------------------------------------------------

def _resources(request, allocations_field):
    """{provider_uuid: {class: amount}} from either body format."""
    if isinstance(allocations_field, list):
        merged = {}
        for entry in allocations_field:
            uuid = entry['resource_provider']['uuid']
            merged.setdefault(uuid, {}).update(entry['resources'])
        return merged
    return {str(uuidlib.UUID(uuid)): entry['resources']
            for uuid, entry in allocations_field.items()}


def item(request, uuid, data):
    item = {'consumer_uuid': uuid,
            'project_id': data.get('project_id', INCOMPLETE_CONSUMER_ID),
            'user_id': data.get('user_id', INCOMPLETE_CONSUMER_ID),
            'allocations': _resources(request, data['allocations'])}
    if request.at_least(28):
        item['consumer_generation'] = data['consumer_generation']
    if request.at_least(38):
        item['consumer_type'] = data['consumer_type']
    return item


def _write(request, wanted, unknown_class):
    """Write every consumer of ``wanted`` ({uuid: item}) in one atomic
    call; raise the HTTPError of the first item at fault (``unknown_class``
    words a class that does not exist, as ``error`` takes it)."""
    def attempt():
        if not request.at_least(28):
            current = _read(request, list(wanted))
            for uuid, request_item in wanted.items():
                request_item['consumer_generation'] = current[uuid].get(
                    'consumer_generation')
        return allocations.write(
            request.context, list(wanted.values()), atomic=True,
            new_type=None if not request.at_least(38) else
            allocations.DEFAULT_CONSUMER_TYPE)

    # From 1.28 the client names the generation: a conflict is its answer.
    answers = attempt() if request.at_least(28) else UNTIL_UNRACED(attempt)
    failed = [a for a in answers if a['status'] != 200]
    if failed:
        raise error(wanted, failed, unknown_class)


def error(wanted, failed, unknown_class):
    """Placement's error for the first item at fault of a write of
    ``wanted``; ``unknown_class`` words a class that does not exist (with
    %(consumer)s and %(resource_class)s) as the writing handler does."""
    at_fault = [a for a in failed if a['status'] != 424] or failed
    answer = at_fault[0]
    uuid = answer.get('consumer_uuid')
    if answer.get('code') == codes.CONSUMER_GENERATION_CONFLICT.code:
        # Placement shows a consumer it has not got as null, and the
        # generation given as Python prints it (None, not null).
        expected = answer.get('consumer_generation')
        return http.conflict(
            'consumer generation conflict - expected %s but got %s'
            % ('null' if expected is None else expected,
               wanted[uuid]['consumer_generation']),
            http.CONCURRENT_UPDATE)
    return faults.allocation_refused(
        answer, unknown_class,
        'Unable to allocate inventory for consumer %s: ' % uuid)


def put(request, consumer_uuid):
    uuid = consumer(consumer_uuid)
    data = request.json(schemas.put_allocations(request))
    _write(request, {uuid: item(request, uuid, data)}, UNKNOWN_CLASS_PUT)
    return http.Response(204)


def post_many(request):
    if not request.at_least(13):
        raise http.not_found()
    data = request.json(schemas.post_allocations(request))
    wanted = {}
    for raw_uuid, fields in data.items():
        uuid = consumer(raw_uuid)
        wanted[uuid] = item(request, uuid, fields)
    _write(request, wanted, UNKNOWN_CLASS_POST)
    return http.Response(204)


def delete(request, consumer_uuid):
    if not http.is_uuid(consumer_uuid):
        raise http.not_found("No allocations for consumer '%s'"
                             % consumer_uuid)
    uuid = consumer(consumer_uuid)

    def attempt():
        current = _read(request, [uuid])[uuid]
        if current['status'] == 404:
            raise http.not_found("No allocations for consumer '%s'" % uuid)
        return allocations.write(request.context, [{
            'consumer_uuid': uuid,
            'consumer_generation': current['consumer_generation'],
            'project_id': current['project_id'],
            'user_id': current['user_id'], 'allocations': {}}])

    answer, = UNTIL_UNRACED(attempt)
    faults.checked(answer)
    return http.Response(204)
