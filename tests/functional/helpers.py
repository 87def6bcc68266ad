"""Small steps the functional tests share, written against the wire
contract only."""

from concurrent import futures
import threading
import uuid


def one(answer):
    """The single item of an answer about one object."""
    assert len(answer['items']) == 1, answer
    return answer['items'][0]


def provider(rpc, inventories=None, parent=None, name=None):
    """Create a provider (with inventory); returns (uuid, generation)."""
    provider_uuid = str(uuid.uuid4())
    item = one(rpc.create_provider(uuid=provider_uuid,
                                   name=name or 'rp-' + provider_uuid,
                                   parent_uuid=parent))
    assert item['status'] == 200, item
    generation = item['generation']
    if inventories:
        item = one(rpc.set_inventories(
            provider_uuid=provider_uuid, provider_generation=generation,
            inventories=inventories))
        assert item['status'] == 200, item
        generation = item['generation']
    return provider_uuid, generation


def alloc_item(consumer, allocations, generation=None, project='test-project',
               user='test-user', **extra):
    item = {'consumer_uuid': consumer, 'consumer_generation': generation,
            'project_id': project, 'user_id': user,
            'allocations': allocations}
    item.update(extra)
    return item


def allocate(rpc, consumer, allocations, generation=None, **extra):
    """One single-item allocate; returns the item."""
    return one(rpc.allocate(items=[alloc_item(consumer, allocations,
                                              generation, **extra)]))


def usage(rpc, provider_uuid):
    return one(rpc.get_usages(provider_uuids=[provider_uuid]))['usages']


def assert_fault(item, status, code):
    assert (item['status'], item.get('code')) == (status, code), item
    assert isinstance(item.get('detail'), str) and item['detail'], item


def in_parallel(fn, jobs, clients=16):
    """``fn(job)`` of every job from ``clients`` threads, started together
    when there are no more jobs than threads; results in job order."""
    start = threading.Barrier(min(clients, len(jobs)))

    def run(job):
        if len(jobs) <= clients:
            start.wait()
        return fn(job)

    with futures.ThreadPoolExecutor(clients) as pool:
        return list(pool.map(run, jobs))
