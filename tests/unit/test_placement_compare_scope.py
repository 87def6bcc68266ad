"""``placement compare --partition``: one side read only for some
providers, and its project usages summed from the consumers found on
them, in the form ``GET /usages?project_id=`` answers at 1.37 and 1.38
(Placement 16: one map of classes; per consumer type, each with its
``consumer_count``)."""

from allocworker.from_placement import compare

P1, P2 = 'p-1', 'p-2'


def _endpoint():
    """A fetch callable over a two-provider cloud, and the paths read."""
    consumer = {
        'c-1': {'allocations': {P1: {'resources': {'VCPU': 2},
                                     'generation': 1}},
                'project_id': 'proj', 'user_id': 'u',
                'consumer_generation': 1, 'consumer_type': 'INSTANCE'},
        'c-2': {'allocations': {P2: {'resources': {'VCPU': 5},
                                     'generation': 1}},
                'project_id': 'proj', 'user_id': 'u',
                'consumer_generation': 1, 'consumer_type': 'INSTANCE'}}
    on = {P1: ['c-1'], P2: ['c-2']}
    paths = []

    def fetch(path, version=compare.VERSION):
        paths.append(path)
        if path == '/resource_providers':
            return 200, {'resource_providers': [
                {'uuid': p, 'name': 'n-' + p, 'generation': 1,
                 'parent_provider_uuid': None, 'root_provider_uuid': p}
                for p in (P1, P2)]}
        if path.startswith('/allocations/'):
            return 200, consumer[path.rsplit('/', 1)[1]]
        if path.startswith('/usages'):
            return 200, {'usages': {'VCPU': 7}}
        provider, what = path.split('/')[2:4]
        return 200, {
            'inventories': {'inventories': {}}, 'traits': {'traits': []},
            'aggregates': {'aggregates': []}, 'usages': {'usages': {}},
            'allocations': {'allocations': {c: {} for c in on[provider]}},
        }[what]
    return fetch, paths


def test_unscoped_reads_every_provider_and_project_usages():
    fetch, paths = _endpoint()
    found = compare.books(fetch, '1.37')
    assert ('provider', P2) in found and ('consumer', 'c-2') in found
    assert found[('project usages', 'proj')] == {'VCPU': 7}
    assert '/usages?project_id=proj' in paths


def test_scoped_reads_only_its_providers_and_sums_project_usages():
    fetch, paths = _endpoint()
    found = compare.books(fetch, '1.37', only={P1})
    assert ('provider', P1) in found and ('provider', P2) not in found
    assert ('consumer', 'c-2') not in found
    assert found[('project usages', 'proj')] == {'VCPU': 2}
    assert not [p for p in paths if P2 in p or p.startswith('/usages')]


def test_summed_usages_in_placement_forms():
    bodies = [
        {'project_id': 'a', 'consumer_type': 'INSTANCE', 'allocations': {
            'x': {'resources': {'VCPU': 1, 'MEMORY_MB': 512}},
            'y': {'resources': {'DISK_GB': 10}}}},
        {'project_id': 'a', 'consumer_type': 'INSTANCE', 'allocations': {
            'x': {'resources': {'VCPU': 2}}}},
        {'project_id': 'a', 'consumer_type': 'MIGRATION', 'allocations': {
            'x': {'resources': {'VCPU': 4}}}},
        {'project_id': 'b', 'consumer_type': 'unknown', 'allocations': {
            'y': {'resources': {'DISK_GB': 1}}}},
        {'project_id': 'c', 'allocations': {}}]
    assert compare.summed_usages(bodies, '1.37') == {
        'a': {'VCPU': 7, 'MEMORY_MB': 512, 'DISK_GB': 10},
        'b': {'DISK_GB': 1}}
    assert compare.summed_usages(bodies, '1.38') == {
        'a': {'INSTANCE': {'consumer_count': 2, 'VCPU': 3,
                           'MEMORY_MB': 512, 'DISK_GB': 10},
              'MIGRATION': {'consumer_count': 1, 'VCPU': 4}},
        'b': {'unknown': {'consumer_count': 1, 'DISK_GB': 1}}}
