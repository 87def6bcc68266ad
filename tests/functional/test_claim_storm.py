"""A boot storm at scale through claims: a cloud of hundreds of NUMA
trees with sharing disk (``benchmarks.candidates_cloud``, bulk-loaded),
many clients claiming at once against several worker processes. Any
item that is not a 200 fails the test (the storm of issue 25 once
answered a 500), the boots spread over the hosts, and the books audit
clean afterwards.
"""

import collections
import uuid

from benchmarks import candidates_cloud as cloud
from tests.functional import services
from tests.functional.helpers import in_parallel

TREES = 300
BOOTS = 120
REQUEST = {'groups': [{'resources': {'VCPU': 2, 'MEMORY_MB': 1024,
                                     'DISK_GB': 10}}]}
WORKER_CONFIG = """
[database]
max_overflow = 10
"""


def test_a_storm_of_claims_on_hundreds_of_trees(rpc, database, scratch):
    loader = cloud.BulkLoader(database, placement=False)
    try:
        loader.load(cloud.sharing_rows(), sharing=True)
        loader.load(cloud.tree_rows(0, TREES))
    finally:
        loader.close()

    def boot(consumer):
        return rpc.call('claim', items=[{
            'consumer_uuid': consumer, 'consumer_generation': None,
            'project_id': 'storm', 'user_id': 'storm',
            'request': REQUEST}], rpc_timeout=120)['items'][0]

    placed = in_parallel(boot, [str(uuid.uuid4()) for _ in range(BOOTS)],
                         clients=16)
    assert [p['status'] for p in placed] == [200] * BOOTS, [
        p for p in placed if p['status'] != 200][:3]
    per_host = collections.Counter(p['root_uuid'] for p in placed)
    print('\n%d boots on %d hosts, at most %d on one'
          % (BOOTS, len(per_host), max(per_host.values())))
    # Spread over 300 empty hosts: one boot each, but for a rare pair of
    # claims that weighed the same host and committed at once (a claim
    # passes over a host placed in since it weighed it, or held by
    # another writer). Issue 25's target: within 10% of an even spread.
    assert len(per_host) >= 0.9 * BOOTS, per_host.most_common(3)
    for p in placed:
        assert sum(r.get('DISK_GB', 0) for r in p['allocations'].values()
                   ) == 10
    audit = services.manage('%s/sync.conf' % scratch, 'audit', check=False)
    assert audit.returncode == 0, audit.stdout + audit.stderr
