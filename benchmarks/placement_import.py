"""The move from Placement at size: ``allocworker-manage placement
import``, then ``--catch-up`` after 1% of the consumers changed (the
write pause an operator sees), with the import rate and peak memory.

    .venv/bin/python -m benchmarks.placement_import \
        --providers 10000 --consumers 100000 [--backend mysql]

Placement's schema is made by Placement 16.0.0's own ``placement-manage
db sync`` (``.venv-placement``, as ``peers.py`` installs it); the cloud
is then written straight into that schema with SQL, because filling
100,000 consumers through Placement's HTTP API takes far longer than
the import it feeds (the tests fill theirs over HTTP). Each provider
has VCPU, MEMORY_MB and DISK_GB and one trait, providers are spread over
ten aggregates, and each consumer holds VCPU and MEMORY_MB on one
provider. Consumers were created one after another over the day before; the
changes are stamped now:
half of the changed consumers move to another provider, a quarter are
deleted, a quarter are new. Peak memory is the import process's
maximum resident set (``getrusage`` of the finished child).
"""

import argparse
import datetime
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import sqlalchemy as sa

from benchmarks import cpu
from benchmarks import peers
from benchmarks import results
from tests.functional import services

CHUNK = 5000


def placement_schema(url, scratch):
    venv_bin = peers.placement_bin()
    conf = os.path.join(scratch, 'placement.conf')
    with open(conf, 'w') as f:
        f.write('[placement_database]\nconnection = %s\n' % url)
    subprocess.run([os.path.join(venv_bin, 'placement-manage'),
                    '--config-file', conf, 'db', 'sync'], check=True,
                   capture_output=True, timeout=600)


def _insert(conn, table, rows):
    for start in range(0, len(rows), CHUNK):
        conn.execute(sa.table(table, *[sa.column(c) for c in rows[0]])
                     .insert(), rows[start:start + CHUNK])


def fill(url, providers, consumers):
    """The cloud in Placement's tables; (provider uuids, consumer uuids,
    {consumer uuid: provider row id})."""
    engine = sa.create_engine(url)
    old = datetime.datetime.utcnow() - datetime.timedelta(days=1)
    # Consumers were made over the day before the import, one after the
    # other (all stamped alike, every one would count as changed).
    spread = datetime.timedelta(hours=23) / max(consumers, 1)
    rp_uuids = [str(uuid.uuid4()) for _ in range(providers)]
    c_uuids = [str(uuid.uuid4()) for _ in range(consumers)]
    where = {}
    with engine.begin() as conn:
        _insert(conn, 'resource_providers', [
            {'id': n + 1, 'uuid': u, 'name': 'host-%d' % n, 'generation': 3,
             'root_provider_id': n + 1, 'created_at': old}
            for n, u in enumerate(rp_uuids)])
        _insert(conn, 'inventories', [
            {'resource_provider_id': n + 1, 'resource_class_id': rc,
             'total': total, 'reserved': 0, 'min_unit': 1,
             'max_unit': total, 'step_size': 1, 'allocation_ratio': 1.0,
             'created_at': old}
            for n in range(providers)
            for rc, total in ((0, 1024), (1, 1048576), (2, 100000))])
        _insert(conn, 'traits', [{'id': 1, 'name': 'CUSTOM_BENCH',
                                  'created_at': old}])
        _insert(conn, 'resource_provider_traits', [
            {'trait_id': 1, 'resource_provider_id': n + 1,
             'created_at': old} for n in range(providers)])
        _insert(conn, 'placement_aggregates', [
            {'id': a + 1, 'uuid': str(uuid.uuid4()), 'created_at': old}
            for a in range(10)])
        _insert(conn, 'resource_provider_aggregates', [
            {'resource_provider_id': n + 1, 'aggregate_id': n % 10 + 1,
             'created_at': old} for n in range(providers)])
        _insert(conn, 'projects', [{'id': p + 1, 'external_id': 'p%d' % p,
                                    'created_at': old} for p in range(100)])
        _insert(conn, 'users', [{'id': p + 1, 'external_id': 'u%d' % p,
                                 'created_at': old} for p in range(100)])
        _insert(conn, 'consumer_types', [{'id': 1, 'name': 'INSTANCE',
                                          'created_at': old}])
        _insert(conn, 'consumers', [
            {'id': n + 1, 'uuid': u, 'project_id': n % 100 + 1,
             'user_id': n % 100 + 1, 'generation': 1,
             'consumer_type_id': 1, 'created_at': old + spread * n}
            for n, u in enumerate(c_uuids)])
        rows = []
        for u in c_uuids:
            where[u] = random.randrange(providers) + 1
            rows += [{'resource_provider_id': where[u], 'consumer_id': u,
                      'resource_class_id': rc, 'used': used,
                      'created_at': old} for rc, used in ((0, 1), (1, 512))]
        _insert(conn, 'allocations', rows)
    engine.dispose()
    return rp_uuids, c_uuids, where


def change(url, c_uuids, where, providers, share):
    """``share`` of the consumers changed, stamped now."""
    engine = sa.create_engine(url)
    now = datetime.datetime.utcnow()
    changed = random.sample(c_uuids, int(len(c_uuids) * share))
    half, quarter = len(changed) // 2, len(changed) // 4
    moved, deleted = changed[:half], changed[half:half + quarter]
    new = [str(uuid.uuid4()) for _ in range(len(changed) - half - quarter)]
    a = sa.table('allocations', sa.column('consumer_id'),
                 sa.column('resource_provider_id'))
    c = sa.table('consumers', sa.column('uuid'), sa.column('generation'),
                 sa.column('updated_at'))
    with engine.begin() as conn:
        conn.execute(sa.update(a).where(a.c.consumer_id.in_(moved)).values(
            resource_provider_id=random.randrange(providers) + 1))
        conn.execute(sa.update(c).where(c.c.uuid.in_(moved)).values(
            generation=c.c.generation + 1, updated_at=now))
        conn.execute(sa.delete(a).where(a.c.consumer_id.in_(deleted)))
        conn.execute(sa.delete(c).where(c.c.uuid.in_(deleted)))
        start = len(c_uuids) + 1
        _insert(conn, 'consumers', [
            {'id': start + n, 'uuid': u, 'project_id': 1, 'user_id': 1,
             'generation': 1, 'consumer_type_id': 1, 'created_at': now}
            for n, u in enumerate(new)])
        _insert(conn, 'allocations', [
            {'resource_provider_id': random.randrange(providers) + 1,
             'consumer_id': u, 'resource_class_id': 0, 'used': 1,
             'created_at': now} for u in new])
    engine.dispose()
    return {'moved': len(moved), 'deleted': len(deleted), 'new': len(new)}


class BackendCpu(object):
    """CPU seconds of the PostgreSQL backends serving ``databases``,
    sampled while a command runs (a backend's CPU is lost
    when it exits, so the last sample of each counts). MariaDB serves
    every database from one shared process: None there."""

    def __init__(self, databases, backend):
        self.databases = set(databases)
        self.active = backend == 'postgresql'
        self.seen = {}
        self.running = False

    def __enter__(self):
        self.running = self.active
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self):
        while self.running:
            for pid, (_ppid, seconds, _rss, cmd) in cpu.processes().items():
                words = cmd.split()
                if words[:1] == ['postgres:'] and len(words) > 3 and \
                        words[3] in self.databases:
                    self.seen[pid] = seconds
            time.sleep(0.2)

    def __exit__(self, *exc):
        self.running = False
        self.thread.join()

    def seconds(self):
        return round(sum(self.seen.values()), 2) if self.active else None


def manage(config, *args, profile=None):
    """allocworker-manage, timed: (seconds, its JSON, its peak RSS MiB,
    its CPU seconds), all of this one process (``wait4``'s usage, not
    the maximum over every child so far); under cProfile into the file
    ``profile`` when given."""
    command = [os.path.join(services.BIN, 'allocworker-manage')]
    if profile:
        command = [sys.executable, '-m', 'cProfile', '-o', profile] + command
    with tempfile.TemporaryFile('w+') as out, \
            tempfile.TemporaryFile('w+') as err:
        started = time.monotonic()
        child = subprocess.Popen(
            command + ['--config-file', config] + list(args),
            stdout=out, stderr=err, text=True)
        _pid, status, usage = os.wait4(child.pid, 0)
        seconds = time.monotonic() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            raise RuntimeError(err.read()[-2000:])
        return (seconds, json.loads(out.read()), usage.ru_maxrss / 1024.0,
                usage.ru_utime + usage.ru_stime)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--providers', type=int, default=10000)
    parser.add_argument('--consumers', type=int, default=100000)
    parser.add_argument('--changed', type=float, default=0.01)
    parser.add_argument('--backend', default='postgresql',
                        choices=['postgresql', 'mysql'])
    parser.add_argument('--profile', metavar='DIR',
                        help='write cProfile files of both passes here')
    parser.add_argument('--out', metavar='FILE',
                        help='also write a result file (benchmarks/'
                        'results.py), e.g. benchmarks/results/'
                        'placement_import.json')
    args = parser.parse_args(argv)
    record = results.Record('placement_import', argv or sys.argv[1:])
    scratch = tempfile.mkdtemp(prefix='aw-import-')
    with services.fresh_database(args.backend, scratch) as source, \
            services.fresh_database(args.backend, scratch) as books:
        placement_schema(source, scratch)
        started = time.monotonic()
        _rp, c_uuids, where = fill(source, args.providers, args.consumers)
        fill_seconds = time.monotonic() - started
        config = services.write_config(os.path.join(scratch, 'aw.conf'),
                                       books, 'unused')
        services.manage(config, 'db', 'sync')
        profiles = [os.path.join(args.profile, '%s.prof' % name)
                    if args.profile else None
                    for name in ('import', 'catch-up')]
        names = [sa.engine.make_url(u).database for u in (source, books)]
        load_before = os.getloadavg()[0]
        with BackendCpu(names, args.backend) as first_db:
            first = manage(config, 'placement', 'import',
                           '--from-connection', source, '--format', 'json',
                           profile=profiles[0])
        changes = change(source, c_uuids, where, args.providers,
                         args.changed)
        with BackendCpu(names, args.backend) as catch_db:
            catch = manage(config, 'placement', 'import', '--catch-up',
                           '--from-connection', source, '--format', 'json',
                           profile=profiles[1])
    row = {'backend': args.backend, 'providers': args.providers,
           'consumers': args.consumers,
           'load_average': [load_before, os.getloadavg()[0]],
           'fill_seconds': round(fill_seconds, 1),
           'import_seconds': round(first[0], 2),
           'import_cpu_seconds': round(first[3], 2),
           'import_database_cpu_seconds': first_db.seconds(),
           'import_items_per_s': first[1]['items_per_second'],
           'import_counts': first[1]['counts'],
           'peak_rss_mib': round(first[2], 1),
           'changes': changes,
           'catch_up_seconds': round(catch[0], 2),
           'catch_up_peak_rss_mib': round(catch[2], 1),
           'catch_up_cpu_seconds': round(catch[3], 2),
           'catch_up_database_cpu_seconds': catch_db.seconds(),
           'catch_up_audit_seconds': catch[1]['audit']['seconds'],
           'catch_up_in_transaction_seconds': catch[1]['seconds'],
           # The write pause beyond the pass and its audit: the command's
           # start (imports, configuration, connecting) and ANALYZE.
           'catch_up_outside_pass_seconds': round(
               catch[0] - catch[1]['seconds'] -
               catch[1]['audit']['seconds'], 2),
           'catch_up_counts': catch[1]['counts'],
           'audit_clean': first[1]['audit']['clean'] and
           catch[1]['audit']['clean']}
    json.dump(row, sys.stdout, indent=1)
    sys.stdout.write('\n')
    if args.out:
        record.write(args.out, [row])


if __name__ == '__main__':
    main()
