"""The audit trail's lines: one self-contained line per committed item."""

import logging
import types

from hypothesis import given
from hypothesis import strategies as st

from allocworker import audit

CONTEXT = types.SimpleNamespace(request_id='req-1', user_id='u1',
                                project_id='p1', roles=['admin', 'reader'],
                                global_request_id='req-g')
HEAD = ('audit request_id=req-1 user_id=u1 project_id=p1 roles=admin,reader'
        ' global_request_id=req-g')


def test_one_line_per_committed_item_with_every_field():
    items = [{'consumer_uuid': 'c1', 'status': 200},
             {'consumer_uuid': 'c2', 'status': 409, 'code': 'x'},
             {'uuid': 'e1', 'status': 202, 'code': 'event.held'},
             {'name': 'CUSTOM_A', 'status': 200},
             {'status': 200}]
    assert audit.lines(CONTEXT, 'allocate', items) == [
        HEAD + ' call=allocate subject=c1 status=200',
        HEAD + ' call=allocate subject=e1 status=202 code=event.held',
        HEAD + ' call=allocate subject=CUSTOM_A status=200',
        HEAD + ' call=allocate subject=None status=200']


def test_subject_is_the_first_key_present():
    item = {'uuid': '', 'provider_uuid': 'p', 'name': 'n', 'status': 201}
    assert audit.lines(CONTEXT, 'set_inventories', [item]) == [
        HEAD + ' call=set_inventories subject=p status=201']


def test_a_context_without_identity():
    assert audit.lines(None, 'claim', [{'consumer_uuid': 'c',
                                        'status': 200}]) == [
        'audit request_id=None user_id=None project_id=None roles= '
        'global_request_id=None call=claim subject=c status=200']


def test_a_claimed_identity_cannot_forge_lines():
    context = types.SimpleNamespace(request_id='r', user_id='u\naudit x',
                                    project_id='p\r', roles=['a\nb'])
    [line] = audit.lines(context, 'allocate', [
        {'consumer_uuid': 'c\nd', 'status': 200}])
    assert '\n' not in line and '\r' not in line


@given(st.lists(st.fixed_dictionaries(
    {'status': st.sampled_from([200, 201, 202, 207, 299, 300, 400, 409,
                                500])},
    optional={'consumer_uuid': st.text(max_size=5),
              'name': st.text(max_size=5),
              'code': st.text('abc._', max_size=5)}), max_size=20),
    st.text(max_size=8))
def test_every_committed_item_has_one_whole_line(items, user):
    context = types.SimpleNamespace(request_id='r', user_id=user,
                                    project_id='p', roles=[])
    found = audit.lines(context, 'allocate', items)
    committed = [i for i in items if 200 <= i['status'] < 300]
    assert len(found) == len(committed)
    for line, item in zip(found, committed):
        assert '\n' not in line and '\r' not in line
        assert line.startswith('audit request_id=r user_id=')
        assert ' call=allocate subject=' in line
        suffix = ' status=%d' % item['status']
        if item.get('code'):
            suffix += ' code=%s' % item['code']
        assert line.endswith(suffix)


class _Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


def test_a_call_is_one_record_holding_its_lines():
    logger = logging.getLogger('allocworker.audit')
    handler = _Records()
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        items = [{'consumer_uuid': 'c%d' % n, 'status': 200}
                 for n in range(3)] + [{'consumer_uuid': '%', 'status': 200}]
        audit.record(CONTEXT, 'allocate', items)
        audit.record(CONTEXT, 'get_allocations', items)  # not a write
        audit.record(CONTEXT, 'allocate', [{'status': 409}])  # none
        logger.setLevel(logging.WARNING)
        audit.record(CONTEXT, 'allocate', items)  # info is off
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    [record] = handler.records
    assert record.levelno == logging.INFO
    assert record.getMessage().split('\n') == audit.lines(
        CONTEXT, 'allocate', items)
