"""benchmarks/README.md's results are the committed result files,
rendered (``benchmarks/render.py``): a file changed without rendering the
page again, or a figure edited by hand, fails here."""

from benchmarks import render


def test_the_page_shows_exactly_the_committed_result_files():
    with open(render.PAGE) as f:
        assert f.read() == render.page(), (
            'benchmarks/README.md is stale: run '
            '.venv/bin/python -m benchmarks.render')


def test_the_page_has_its_markers_once():
    with open(render.PAGE) as f:
        text = f.read()
    assert text.count(render.BEGIN) == 1 and text.count(render.END) == 1


def _shapes_result():
    def side(p50, broken=0, short=0):
        return {'p50_ms': p50, 'p99_ms': p50 * 2, 'server_cpu_ms': 1.5,
                'db_cpu_ms': 0.5, 'non_200': 0, 'broken_answers': broken,
                'short_answers': short}
    return {
        'benchmark': 'candidates_shapes',
        'commit': {'sha': 'abcdef0123456789', 'dirty': False},
        'command': ['.venv/bin/python', '-m', 'benchmarks.candidates_shapes'],
        'machine': {'cores': 2, 'loadavg': {'start': [1, 1, 1],
                                            'end': [2, 2, 2]}},
        'started': '2026-01-01T00:00:00+00:00',
        'rows': [{
            'row': 'member_of', 'query': 'resources=VCPU:1&limit=1000',
            'trees': 10000, 'version': '1.39',
            'allocworker': side(8.0), 'placement': side(100.0, 1, 2),
            'allocate': side(5.0), 'ratio_p50': 0.08, 'target_ms': 20.0,
            'target_by': '0.2x placement p50', 'met': True,
            'placement_tuning': {'max_allocation_candidates': '1000',
                                 'uwsgi processes': 2}}]}


def test_candidates_shapes_renders_the_tuning_and_the_target():
    text = render.RENDERERS['candidates_shapes'](_shapes_result())
    assert 'on 10,000 trees' in text
    assert 'Placement tuned: max_allocation_candidates 1000, uwsgi ' \
        'processes 2' in text
    assert ('| member_of `resources=VCPU:1&limit=1000` | 8.0 / 16.0 | '
            '100.0 / 200.0 | 0.08 | 5.0 | 20.0 (0.2x placement p50) | yes '
            '| 1.5 + 0.5 | 1.5 + 0.5 | 0 / 0 | 0 / 1; of another size '
            '0 / 2 |') in text


def _partitions_result():
    def side(p50, short=0):
        return {'p50_ms': p50, 'p99_ms': p50 * 2, 'per_s': 100.0,
                'worker_cpu_ms': 4.0, 'db_cpu_ms': 2.0, 'non_200': 0,
                'violations': 0, 'errors': 0, 'short': short}
    sides = {'split': {'trees': 10000, 'home_roots': 1000,
                       'partitions': ['p%d' % n for n in range(10)]},
             'own': {'trees': 1000, 'home_roots': 1000,
                     'partitions': ['p0']}}
    row = {'row': 'candidates', 'concurrency': 1, 'user': 'nova-p0',
           'partition': 'p0', 'backend': 'postgresql', 'workers': 2,
           'trees': 10000, 'limit': 1000, 'candidates_per_answer': 1000,
           'sides': sides, 'split': side(11.0, short=1), 'own': side(10.0),
           'ratio': {'p50_ms': 1.1}, 'target': 1.2, 'met': True}
    return dict(_shapes_result(), benchmark='claims_partitions', rows=[row])


def test_claims_partitions_renders_both_sides_and_the_target():
    text = render.RENDERERS['claims_partitions'](_partitions_result())
    assert 'on 10 partitions of 10,000 trees' in text
    assert '**split**, 10,000 roots dealt in turn into partitions `p0` ' \
        '.. `p9`' in text
    assert '**own**, 1,000 roots all in `p0`' in text
    assert 'fresh PostgreSQL database' in text
    assert 'Target: split / own p50 <= 1.2' in text
    assert '1000 candidates a search' in text
    assert ('| get_allocation_candidates, limit=1000 | 1 | 11.0 / 22.0 | '
            '10.0 / 20.0 | 1.1 | <= 1.2 | yes | 100.0 / 100.0 | 4.0 + 2.0 '
            '| 4.0 + 2.0 | 1 / 0 |') in text
