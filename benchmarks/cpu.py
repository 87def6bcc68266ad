"""CPU time spent while a figure is measured, from /proc.

Two sums are taken before and after each figure:

- ``machine``: every CPU second the kernel accounted on the machine
  (/proc/stat: user, nice, system, irq, softirq, steal), so nothing the
  workload caused is missed (database fsync threads, the broker, the
  kernel's network stack), and nothing anybody else ran is left out
  either: on a shared machine it is an upper bound;
- ``own``: the processes this run involves, by part: ``client`` (this
  process), ``servers`` (every descendant of this process: workers, no-op
  servers, uWSGI masters, workers and routers), ``database``
  (PostgreSQL: the backends of the run's databases plus the server's own
  auxiliary processes; MariaDB: its one server process) and ``rabbitmq``
  (the default broker node's Erlang VM). The auxiliary database
  processes and the broker are shared with whoever else uses them, so
  ``own`` is much less noisy than ``machine`` but not free of noise.
"""

import os

TICK = os.sysconf('SC_CLK_TCK')
PAGE = os.sysconf('SC_PAGE_SIZE')
PARTS = ('client', 'servers', 'database', 'rabbitmq')
AUXILIARY = {'checkpointer', 'background', 'walwriter', 'autovacuum',
             'logical', 'archiver', 'stats', 'walsummarizer'}


def _stat(pid):
    """(ppid, cpu seconds, rss bytes) of ``pid``, or None if it is gone."""
    try:
        with open('/proc/%s/stat' % pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
    except OSError:
        return None
    # After the command: state, ppid, ... utime (12), stime (13), rss (22).
    return (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK,
            int(fields[21]) * PAGE)


def _cmdline(pid):
    try:
        with open('/proc/%s/cmdline' % pid, 'rb') as f:
            return f.read().replace(b'\0', b' ').decode('utf-8', 'replace')
    except OSError:
        return ''


def machine_seconds():
    with open('/proc/stat') as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest is in user)
    return (sum(fields[:3]) + sum(fields[5:8])) / TICK


class Meter(object):
    """Snapshots of CPU seconds per part; ``databases`` names the run's
    databases so their backends count and other engineers' do not."""

    def __init__(self, databases=()):
        self.databases = set(databases)

    def _part(self, pid, ppids, cmd):
        me = os.getpid()
        if pid == me:
            return 'client'
        parent, seen = ppids.get(pid), set()
        while parent and parent not in seen:
            if parent == me:
                return 'servers'
            seen.add(parent)
            parent = ppids.get(parent)
        words = cmd.split()
        if words and words[0] == 'postgres:':
            # "postgres: CLUSTER: USER DB HOST STATE" is a backend (ours
            # when DB is); the rest is the server's own work.
            ours = len(words) > 3 and words[3] in self.databases
            return 'database' if ours or words[2:3] and \
                words[2] in AUXILIARY else None
        if words and words[0].endswith(('/bin/postgres', 'mariadbd',
                                        'mysqld')):
            return 'database'
        if words and words[0].endswith('beam.smp') and \
                '/var/lib/rabbitmq' in cmd:
            return 'rabbitmq'
        return None

    def snapshot(self):
        """{pid: (part, cpu seconds)} of the processes that count, plus the
        machine's total under the key ``None``."""
        stats = _all_stats()
        ppids = {pid: s[0] for pid, s in stats.items()}
        taken = {None: ('machine', machine_seconds())}
        for pid, (_, seconds, _) in stats.items():
            part = self._part(pid, ppids, _cmdline(pid))
            if part:
                taken[pid] = (part, seconds)
        return taken

    @staticmethod
    def spent(before, after):
        """CPU seconds per part between two snapshots (a process born in
        between counts from zero; one that ended in between is lost)."""
        totals = dict.fromkeys(PARTS + ('machine',), 0.0)
        for pid, (part, seconds) in after.items():
            start = before.get(pid, (part, 0.0))[1]
            totals[part] += max(0.0, seconds - start)
        totals['own'] = sum(totals[p] for p in PARTS)
        return totals


def _all_stats():
    """{pid: _stat(pid)} of every process alive now."""
    stats = {}
    for name in os.listdir('/proc'):
        if name.isdigit():
            stat = _stat(name)
            if stat:
                stats[int(name)] = stat
    return stats


def _with_descendants(stats, pids):
    """``pids`` and every process descended from them, per ``stats``."""
    wanted = set(pids)
    changed = True
    while changed:
        changed = False
        for pid, (ppid, _, _) in stats.items():
            if ppid in wanted and pid not in wanted:
                wanted.add(pid)
                changed = True
    return wanted


def rss_bytes(pids):
    """Resident memory of ``pids`` and all their descendants: (the
    largest single process, the sum)."""
    stats = _all_stats()
    sizes = [stats[pid][2] for pid in _with_descendants(stats, pids)
             if pid in stats]
    return max(sizes, default=0), sum(sizes)


def tree_seconds(root):
    """CPU seconds of process ``root``'s descendants, and of ``root``."""
    stats = _all_stats()
    children = sum(stats[pid][1] for pid in _with_descendants(stats, [root])
                   if pid in stats and pid != root)
    return children, stats[root][1] if root in stats else 0.0
