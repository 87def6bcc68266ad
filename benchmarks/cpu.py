"""CPU time spent while a figure is measured, read through psutil.

Two sums are taken before and after each figure:

- ``machine``: every CPU second the kernel accounted on the machine
  (user, nice, system, irq, softirq, steal), so nothing the
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

import psutil

PARTS = ('client', 'servers', 'database', 'rabbitmq')
AUXILIARY = {'checkpointer', 'background', 'walwriter', 'autovacuum',
             'logical', 'archiver', 'stats', 'walsummarizer'}


def process_seconds(pid):
    """CPU seconds (user and system) of ``pid``, or None if it is gone."""
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return times.user + times.system


def processes():
    """{pid: (ppid, cpu seconds, rss bytes, command line)} of every process
    alive now."""
    found = {}
    for process in psutil.process_iter(
            ['ppid', 'cpu_times', 'memory_info', 'cmdline']):
        info = process.info
        times, memory = info['cpu_times'], info['memory_info']
        # A PostgreSQL process rewrites its title in place: it reads back
        # as one argument or as several, with the same words.
        found[process.pid] = (
            info['ppid'], times.user + times.system if times else 0.0,
            memory.rss if memory else 0, ' '.join(info['cmdline'] or ()))
    return found


def machine_seconds():
    times = psutil.cpu_times()
    # Guest time is inside user already.
    return (times.user + times.nice + times.system + times.irq
            + times.softirq + times.steal)


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
        found = processes()
        ppids = {pid: info[0] for pid, info in found.items()}
        taken = {None: ('machine', machine_seconds())}
        for pid, (_, seconds, _, cmd) in found.items():
            part = self._part(pid, ppids, cmd)
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


def _with_descendants(found, pids):
    """``pids`` and every process descended from them, per ``found``."""
    wanted = set(pids)
    changed = True
    while changed:
        changed = False
        for pid, info in found.items():
            if info[0] in wanted and pid not in wanted:
                wanted.add(pid)
                changed = True
    return wanted


def rss_bytes(pids):
    """Resident memory of ``pids`` and all their descendants: (the
    largest single process, the sum)."""
    found = processes()
    sizes = [found[pid][2] for pid in _with_descendants(found, pids)
             if pid in found]
    return max(sizes, default=0), sum(sizes)


def tree_seconds(root):
    """CPU seconds of process ``root``'s descendants, and of ``root``."""
    found = processes()
    children = sum(found[pid][1] for pid in _with_descendants(found, [root])
                   if pid in found and pid != root)
    return children, found[root][1] if root in found else 0.0
