"""The benchmark's chart: throughput against concurrency, one line per
workload, the ceilings dashed. matplotlib is installed on first use (the
``bench`` extra pins it)."""

import os
import sys

from benchmarks import peers

# (workload, label, colour, dashed)
CALLS = [
    ('noop_rpc_roundtrip', 'no-op RPC round trip (ceiling)', 'grey', True),
    ('allocate_single', 'allocworker RPC allocate', 'tab:blue', False),
    ('get_allocations_one', 'allocworker RPC get_allocations', 'tab:cyan',
     False),
    ('noop_uwsgi_roundtrip', 'no-op WSGI under uWSGI (ceiling)', 'black',
     True),
    ('uwsgi_api_put_allocations', 'allocworker-api PUT /allocations',
     'tab:green', False),
    ('uwsgi_api_get_allocations', 'allocworker-api GET /allocations',
     'tab:olive', False),
    ('placement_put_allocations', 'Placement 16 PUT /allocations',
     'tab:red', False),
    ('placement_get_allocations', 'Placement 16 GET /allocations',
     'tab:orange', False),
]
ITEMS = [
    ('noop_rpc_100_items', 'no-op RPC, 100 items (ceiling)', 'grey', True),
    ('allocate_batch_100_independent', 'allocate 100 independent',
     'tab:blue', False),
    ('allocate_batch_100_atomic', 'allocate 100 atomic', 'tab:purple',
     False),
]


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        peers.pip_install(sys.executable, ['matplotlib'])
        import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot
    return pyplot


def draw(rows, path, args):
    pyplot = _pyplot()
    figure, (calls, items) = pyplot.subplots(1, 2, figsize=(13, 7))
    for axes, lines, unit in ((calls, CALLS, 'calls/s'),
                              (items, ITEMS, 'items/s')):
        for workload, label, colour, dashed in lines:
            points = sorted((r['concurrency'], r['per_s']) for r in rows
                            if r['workload'] == workload)
            if not points:
                continue
            axes.plot([p[0] for p in points], [p[1] for p in points],
                      marker='o', color=colour, label=label,
                      linestyle='--' if dashed else '-')
        axes.set_xscale('log', base=2)
        axes.set_yscale('log')
        concurrencies = sorted({r['concurrency'] for r in rows})
        axes.set_xticks(concurrencies)
        axes.set_xticklabels([str(c) for c in concurrencies])
        axes.set_xlabel('concurrency (client threads)')
        axes.set_ylabel(unit)
        axes.grid(True, which='both', alpha=0.3)
        axes.legend(fontsize=8, loc='upper center', ncol=2,
                    bbox_to_anchor=(0.5, -0.14))
    calls.set_title('single calls')
    items.set_title('100-item batches')
    figure.suptitle('allocworker against Placement 16 and the ceilings, '
                    'same run (%d worker processes, uWSGI 2 processes x %d '
                    'threads, PostgreSQL)' % (args.workers, peers.THREADS),
                    fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    print('# chart: %s' % os.path.abspath(path), file=sys.stderr)
