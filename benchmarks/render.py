"""benchmarks/README.md's "Current results", rendered from the committed
result files (``benchmarks/results/*.json``, written by the benchmarks
themselves through ``results.py``), so that every figure on the page can
be traced to a run: its commit, command and machine.

    .venv/bin/python -m benchmarks.render          # rewrite the section
    .venv/bin/python -m benchmarks.render --check  # exit 1 if it is stale

Only the text between the two markers is rendered; the rest of the page
(what each benchmark measures, how to run it) is written by hand.
``tests/unit/test_benchmark_page.py`` fails when the page and the files
disagree.
"""

import argparse
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = os.path.join(HERE, 'README.md')
RESULTS = os.path.join(HERE, 'results')
BEGIN = '<!-- results:begin (rendered by benchmarks/render.py) -->'
END = '<!-- results:end -->'


def _source(result):
    """Where a file's figures come from, in one paragraph."""
    commit = result['commit']
    load = result['machine']['loadavg']
    return ('Run `%s` at commit `%s`%s, %s, on %d cores (load average %s '
            'at the start, %s at the end).' % (
                ' '.join(result['command']), (commit['sha'] or '?')[:10],
                ' with uncommitted changes' if commit['dirty'] else '',
                result['started'], result['machine']['cores'],
                _load(load['start']), _load(load.get('end'))))


def _load(values):
    return '/'.join('%.2f' % v for v in values) if values else '?'


def _table(header, rows):
    lines = ['| %s |' % ' | '.join(header),
             '|%s|' % '|'.join('---' if n == 0 else '---:'
                               for n in range(len(header)))]
    lines += ['| %s |' % ' | '.join(str(cell) for cell in row)
              for row in rows]
    return '\n'.join(lines)


def _claims_filtered(result):
    header = ['request', 'c', 'claim p50 ms', 'allocate p50 ms',
              'claim / allocate p50', 'claims/s', 'allocates/s',
              'claim / allocate per s', 'claim CPU ms (worker + db)',
              'allocate CPU ms (worker + db)', 'not 200 or misplaced']
    rows = []
    for row in result['rows']:
        claim, allocate, ratio = row['claim'], row['allocate'], row['ratio']
        rows.append([
            row['row'], row['concurrency'], claim['p50_ms'],
            allocate['p50_ms'], ratio['p50_ms'], claim['per_s'],
            allocate['per_s'], ratio['per_s'],
            '%s + %s' % (claim['worker_cpu_ms'], claim['db_cpu_ms']),
            '%s + %s' % (allocate['worker_cpu_ms'], allocate['db_cpu_ms']),
            claim['non_200'] + claim['violations'] + claim['errors']])
    trees = {row['trees'] for row in result['rows']}
    return ('### Claims by request shape, %s trees (`claims_filtered`)\n\n'
            '%s\n\n%s' % (', '.join('{:,}'.format(t) for t in sorted(trees)),
                          _source(result), _table(header, rows)))


def _nova_mix(result):
    rows = result['rows']
    by_side = {row['side']: row for row in rows}
    header = ['side', 'how, tuned', 'boots/s', 'boots', 'p50 s', 'p99 s',
              'conflicts', 'failed', 'errors', 'misplaced',
              'CPU ms per boot (server + db)']
    table = [[row['side'], '%s; %s' % (row['how'], ', '.join(
        '%s %s' % item for item in row['tuning'].items())),
        row['boots_per_s'], row['boots'], row['p50_s'], row['p99_s'],
        row['conflicts'], sum(row['failed'].values()), row['errors'],
        row['misplaced'], '%s + %s' % (row['server_cpu_ms_per_boot'],
                                       row['db_cpu_ms_per_boot'])]
             for row in rows]
    ratio = ''
    if 'allocworker' in by_side and 'placement' in by_side:
        ratio = ('\n\nBoots/s, allocworker over Placement: %.1f.' % (
            by_side['allocworker']['boots_per_s'] /
            by_side['placement']['boots_per_s']))
    cloud = rows[0]['cloud']
    return ('### Nova\'s request mix at c=%d on %s hosts (`nova_mix`)\n\n'
            'Zones of %s hosts, %d with a GPU trait, %d disabled, %d full. '
            '%s\n\n%s%s' % (
                rows[0]['concurrency'], '{:,}'.format(rows[0]['trees']),
                '/'.join('{:,}'.format(z) for z in cloud['zones']),
                cloud['gpu'], cloud['disabled'], cloud['full'],
                _source(result), _table(header, table), ratio))


def _other_size(*sides):
    shorts = [side['short_answers'] for side in sides]
    return '; of another size %s' % ' / '.join(
        str(n) for n in shorts) if any(shorts) else ''


def _candidates_shapes(result):
    """allocworker-api beside tuned Placement per request shape, with
    the target each shape is judged by."""
    header = ['shape', 'allocworker p50 / p99 ms', 'Placement p50 / p99 ms',
              'allocworker / Placement p50', 'allocate p50 ms',
              'target ms', 'met', 'CPU ms allocworker (server + db)',
              'CPU ms Placement (server + db)', 'not 200',
              'breaking the filter']
    rows = []
    for row in result['rows']:
        aw, pl = row['allocworker'], row['placement']
        rows.append([
            '%s `%s`' % (row['row'], row['query']),
            '%s / %s' % (aw['p50_ms'], aw['p99_ms']),
            '%s / %s' % (pl['p50_ms'], pl['p99_ms']), row['ratio_p50'],
            row['allocate']['p50_ms'], '%s (%s)' % (
                row['target_ms'], row['target_by']),
            'yes' if row['met'] else 'no',
            '%s + %s' % (aw['server_cpu_ms'], aw['db_cpu_ms']),
            '%s + %s' % (pl['server_cpu_ms'], pl['db_cpu_ms']),
            '%d / %d' % (aw['non_200'], pl['non_200']),
            '%d / %d%s' % (aw['broken_answers'], pl['broken_answers'],
                           _other_size(aw, pl))])
    first = result['rows'][0]
    return ('### `GET /allocation_candidates` by request shape on %s trees '
            '(`candidates_shapes`)\n\n'
            'Microversion %s, `limit=1000`, one request at a time, '
            'allocworker-api and Placement 16 in turns with single allocates '
            'over RPC. Placement tuned: %s; allocworker-api under uWSGI '
            'with the same processes and threads. Target: allocworker\'s '
            'p50 <= 0.2x Placement\'s, or <= 2x an allocate\'s p50 where '
            'that is larger. Not 200 and answers breaking the filter: '
            'allocworker / Placement. %s\n\n%s' % (
                '{:,}'.format(first['trees']), first['version'],
                ', '.join('%s %s' % item
                          for item in first['placement_tuning'].items()),
                _source(result), _table(header, rows)))


def _claims_domains(result):
    """Issue 37's targets beside the figures of one run."""
    by = {(row['row'], row.get('concurrency')): row
          for row in result['rows']}
    rows = []
    one = by.get(('grouped', 1))
    if one:
        rows.append(['claim into a group [anti-affinity per root, spread '
                     'per rack max_skew 1], c=1', 'p50 %s ms; plain claim '
                     '%s ms' % (one['grouped']['p50_ms'],
                                one['plain']['p50_ms']),
                     '%s' % one['ratio']['p50_ms'], '<= 1.3',
                     '%s + %s' % (one['grouped']['worker_cpu_ms'],
                                  one['grouped']['db_cpu_ms'])])
    sixteen = by.get(('grouped', 16))
    if sixteen:
        rows.append(['claims over 16 groups, c=16', '%s/s; allocates %s/s'
                     % (sixteen['grouped']['per_s'],
                        sixteen['allocate']['per_s']),
                     '%s' % sixteen['ratio']['per_s'], '>= 0.5',
                     '%s + %s' % (sixteen['grouped']['worker_cpu_ms'],
                                  sixteen['grouped']['db_cpu_ms'])])
    storm = by.get(('storm', 64))
    if storm:
        rows.append(['64 concurrent claims into one group', '%d placed, '
                     '%d not 200, skew %s' % (storm['members'],
                                              storm['non_200'],
                                              storm['skew']),
                     '%d rule(s) broken' % storm['broken'], '0 broken', ''])
    groups = by.get(('get_groups', None))
    if groups:
        rows.append(['get_groups of a %d-member group' % groups['members'],
                     'p50 %s ms, p99 %s ms' % (
                         groups['p50_ms'], groups['p99_ms']),
                     '%s ms' % groups['p50_ms'], '<= 50 ms', ''])
    trees = result['rows'][0]['trees']
    return ('### Failure-domain groups on %s trees (`claims_domains`)\n\n'
            '100 racks and 10 zones; groups of at most 100 members. %s\n\n'
            '%s' % ('{:,}'.format(trees), _source(result), _table(
                ['row', 'figures', 'measured', 'target',
                 'CPU ms per call (worker + db)'], rows)))


def _claims_partitions(result):
    """The partitions target: a bound caller's calls on a split cloud
    over the same calls on a cloud of its partition's size alone."""
    header = ['call', 'c', 'split p50 / p99 ms', 'own p50 / p99 ms',
              'split / own p50', 'target', 'met', 'calls/s split / own',
              'CPU ms split (worker + db)', 'CPU ms own (worker + db)',
              'not 200 or misplaced (split / own)']
    rows = []
    for row in result['rows']:
        split, own = row['split'], row['own']
        call = {'claim_spread': 'claim, strategy spread',
                'claim_pack': 'claim, strategy pack',
                'candidates': 'get_allocation_candidates, limit=%s'
                % row['limit']}.get(row['row'], row['row'])
        rows.append([
            call, row['concurrency'],
            '%s / %s' % (split['p50_ms'], split['p99_ms']),
            '%s / %s' % (own['p50_ms'], own['p99_ms']),
            row['ratio']['p50_ms'], '<= %s' % row['target'],
            'yes' if row['met'] else 'no',
            '%s / %s' % (split['per_s'], own['per_s']),
            '%s + %s' % (split['worker_cpu_ms'], split['db_cpu_ms']),
            '%s + %s' % (own['worker_cpu_ms'], own['db_cpu_ms']),
            '%d / %d' % tuple(sum(side[k] for k in (
                'non_200', 'violations', 'errors', 'short'))
                for side in (split, own))])
    first = result['rows'][0]
    split, own = first['sides']['split'], first['sides']['own']
    answer = [row['candidates_per_answer'] for row in result['rows']
              if row.get('candidates_per_answer')]
    return ('### A bound caller on %d partitions of %s trees '
            '(`claims_partitions`)\n\n'
            'Every call made as `%s`, bound to partition `%s` by '
            '`[partitions] bindings`, on two clouds of flat roots measured '
            'in alternating windows of the same run: **split**, %s roots '
            'dealt in turn into partitions `%s` .. `%s`, `[partitions] '
            'bindings` binding a user to each; **own**, %s '
            'roots all in `%s`, binding `%s` alone. Each side bulk-loaded '
            'into a fresh %s database of its own and served by an '
            '`allocworker-worker` of its own (%d processes, `[database] '
            'max_overflow = 10`), CPU read per side. Target: split / own '
            'p50 <= %s (the partition narrows the window, it is never a '
            'filter applied after it). Checked per answer: status 200, '
            'every claimed or candidate root in `%s`%s. %s\n\n%s' % (
                len(split['partitions']), '{:,}'.format(split['trees']),
                first['user'], first['partition'],
                '{:,}'.format(split['trees']), split['partitions'][0],
                split['partitions'][-1], '{:,}'.format(own['trees']),
                first['partition'], first['user'],
                {'postgresql': 'PostgreSQL', 'mysql': 'MariaDB',
                 'sqlite': 'SQLite'}.get(first['backend'], first['backend']),
                first['workers'], first['target'], first['partition'],
                ', %d candidates a search' % answer[0] if answer else '',
                _source(result), _table(header, rows)))


def _waiters(result):
    """Parked waiters: the allocates beside them and their wake."""
    rows, by_name = [], {row['row']: row for row in result['rows']}
    for row in result['rows']:
        name = row['row']
        if name.startswith('allocate'):
            parked, none = row['parked'], row['none']
            held = row['writes_to']['parked']
            target = '>= 0.9' if 'parked in' in name else ''
            rows.append([
                '%s (c=%d)' % (name, row['concurrency']),
                'parked %s/s p50 %s ms, none %s/s p50 %s ms; writes to %s '
                '(%s), %d awaited' % (
                    parked['calls_per_s'], parked['p50_ms'],
                    none['calls_per_s'], none['p50_ms'], held['server'],
                    held['holds'], held['consumers_awaited']),
                row['ratio'], target, '%s / %s' % (
                    parked['worker_cpu_ms_per_call'],
                    none['worker_cpu_ms_per_call'])])
        elif name.startswith('idle'):
            rows.append([name, 'parked %s, none %s' % (
                row['parked'], row['none']), '', '', ''])
        elif name == 'park':
            rows.append(['park %d waits in %s' % (row['waiters'],
                                                  row['parked_in']),
                         '%s s; threads %s, RSS %s MiB (before, after)' % (
                             row['seconds'], row['process_0_threads'],
                             row['process_0_rss_mib']), '', '', ''])
        elif name == 'wake':
            rows.append([
                'wake, events stored through %s (%s) at %s/s' % (
                    row['stored_through']['server'],
                    row['stored_through']['holds'], row['wake_rate']),
                '%d of %d answered 200; p50 %s ms, max %s ms' % (
                    row['answered_200'], row['waiters'],
                    row['latency_p50_ms'], row['latency_max_ms']),
                'p99 %s ms' % row['latency_p99_ms'], '<= 1000 ms', ''])
    park = by_name.get('park', {})
    return ('### %s parked `wait_for_events` (`waiters`)\n\n%s\n\n%s' % (
        '{:,}'.format(park.get('waiters', 0)), _source(result), _table(
            ['row', 'figures', 'measured', 'target',
             'worker CPU ms per allocate (parked / none)'], rows)))


def _generic(result):
    """A file no renderer knows yet: its rows' scalar fields."""
    rows = result['rows']
    header = sorted({k for row in rows for k, v in row.items()
                     if not isinstance(v, (dict, list))})
    return '### `%s`\n\n%s\n\n%s' % (
        result['benchmark'], _source(result),
        _table(header, [[row.get(k, '') for k in header] for row in rows]))


RENDERERS = {'claims_filtered': _claims_filtered, 'nova_mix': _nova_mix,
             'claims_domains': _claims_domains,
             'claims_partitions': _claims_partitions,
             'candidates_shapes': _candidates_shapes, 'waiters': _waiters}


def section():
    """The rendered text between the markers."""
    parts = []
    for path in sorted(glob.glob(os.path.join(RESULTS, '*.json'))):
        with open(path) as f:
            result = json.load(f)
        render = RENDERERS.get(result['benchmark'], _generic)
        parts.append('%s\n\nFile: `benchmarks/results/%s`.' % (
            render(result), os.path.basename(path)))
    if not parts:
        parts.append('No result file is committed yet.')
    return '\n'.join([BEGIN, ''] + ['\n\n'.join(parts), '', END])


def page():
    """The whole page as it should read now."""
    with open(PAGE) as f:
        text = f.read()
    before, _, rest = text.partition(BEGIN)
    _, _, after = rest.partition(END)
    return before + section() + after


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--check', action='store_true',
                        help='exit 1 when the page differs from the files')
    args = parser.parse_args(argv)
    wanted = page()
    with open(PAGE) as f:
        stale = f.read() != wanted
    if args.check:
        return 1 if stale else 0
    if stale:
        with open(PAGE, 'w') as f:
            f.write(wanted)
    return 0


if __name__ == '__main__':
    sys.exit(main())
