"""The metric hooks: off they do nothing; on, retries are counted by
cause through retry.write's own policy, and what calls add up reaches
the files (histograms' buckets included) when flushed."""

import os
import time

from oslo_db import exception as db_exc
import prometheus_client
from prometheus_client import multiprocess
from prometheus_client import values
import pytest

from allocworker.conf import CONF
from allocworker.db import api as db_api
from allocworker import metrics
from allocworker import retry


@pytest.fixture
def recording(tmp_path):
    """Metrics on, into a directory of this test; (a registry reading it)."""
    saved = os.environ.get('PROMETHEUS_MULTIPROC_DIR')
    metrics.enable(str(tmp_path))
    registry = prometheus_client.CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(tmp_path))
    CONF.set_override('retry_max_wait', 0, 'worker')
    yield registry
    CONF.clear_override('retry_max_wait', 'worker')
    metrics._on = None
    if saved is None:
        os.environ.pop('PROMETHEUS_MULTIPROC_DIR', None)
    else:
        os.environ['PROMETHEUS_MULTIPROC_DIR'] = saved
    values.ValueClass = values.get_value_class()


def test_hooks_do_nothing_while_metrics_are_off():
    assert not metrics.enabled()
    app = object()
    assert metrics.wsgi(app, str) is app
    assert metrics.answered('allocate', {}, metrics.started('x')) is None


def losing(*errors):
    """A transaction that loses one race per error, then commits."""
    pending = list(errors)

    def transaction():
        if pending:
            raise pending.pop(0)
        return 'committed'
    return transaction


def test_retries_are_counted_by_cause(recording):
    races = [db_api.ConcurrentUpdate(), db_exc.DBDeadlock(),
             db_api.ConnectionLost(Exception('gone')),
             db_exc.DBDuplicateEntry(), db_exc.DBDeadlock()]
    assert retry.write(losing(*races)) == 'committed'
    metrics.flush()
    counted = {cause: recording.get_sample_value(
        'allocworker_retries_total', {'cause': cause})
        for cause in ('generation_conflict', 'deadlock', 'disconnect',
                      'duplicate_entry', 'other')}
    assert counted == {'generation_conflict': 1, 'deadlock': 2,
                       'disconnect': 1, 'duplicate_entry': 1, 'other': 0}


def test_items_are_counted_by_status_and_code(recording):
    metrics.answered('claim', {'status': 207, 'items': [
        {'status': 200}, {'status': 200},
        {'status': 409, 'code': 'capacity.exceeded'}]}, time.monotonic())
    metrics.answered('claim', {'status': 200, 'items': [
        {'status': 200}]}, time.monotonic() - 0.3)
    metrics.flush()

    def sample(name, **labels):
        return recording.get_sample_value('allocworker_' + name, labels)

    assert [sample('calls_total', method='claim', status='207'),
            sample('calls_total', method='claim', status='200'),
            sample('items_total', method='claim', status='200',
                   code='none'),
            sample('items_total', method='claim', status='409',
                   code='capacity.exceeded'),
            sample('claims_total', outcome='claimed'),
            sample('claims_total', outcome='capacity.exceeded'),
            sample('call_duration_seconds_count', method='claim'),
            sample('call_duration_seconds_bucket', method='claim',
                   le='0.25'),
            sample('call_duration_seconds_bucket', method='claim',
                   le='0.5'),
            sample('call_duration_seconds_sum', method='claim')] == \
        [1, 1, 3, 1, 3, 1, 2, 1, 2, pytest.approx(0.3, abs=0.1)]


def test_books_are_summed_over_the_cloud_and_per_partition(monkeypatch):
    import types

    from allocworker.db.ledger import gauges as db_gauges
    from allocworker.metrics import endpoint

    # Two providers named alike, in two partitions (names are unique per
    # partition only).
    rows = [db_gauges.Book('VCPU', 'east', 'u-1', 'h-1', 8, 3, 0),
            db_gauges.Book('DISK_GB', 'east', 'u-1', 'h-1', 100, 0, 0),
            db_gauges.Book('VCPU', 'west', 'u-2', 'h-1', 4, 1, 1)]
    monkeypatch.setattr(db_gauges, 'books', lambda url, per_provider: rows)
    conf = types.SimpleNamespace(
        metrics=types.SimpleNamespace(per_provider=True),
        database=types.SimpleNamespace(connection='unused'))
    found = {(s.name, tuple(sorted(s.labels.items()))): s.value
             for family in endpoint.Books(conf).collect()
             for s in family.samples}
    assert found[('allocworker_resource_used',
                  (('resource_class', 'VCPU'),))] == 4
    assert found[('allocworker_resource_reserved',
                  (('resource_class', 'VCPU'),))] == 1
    per_partition = {labels: value for (name, labels), value in found.items()
                     if name == 'allocworker_partition_resource_capacity'}
    assert per_partition == {
        (('partition', 'east'), ('resource_class', 'DISK_GB')): 100,
        (('partition', 'east'), ('resource_class', 'VCPU')): 8,
        (('partition', 'west'), ('resource_class', 'VCPU')): 4}
    assert found[('allocworker_provider_resource_used', (
        ('partition', 'west'), ('provider', 'h-1'), ('provider_uuid', 'u-2'),
        ('resource_class', 'VCPU')))] == 1
