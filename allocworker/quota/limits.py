"""Where project limits come from, kept per worker process.

``[quota] driver``: ``noop`` (no limits: nothing is judged or locked) or
``unified_limits`` (Keystone's registered limits and project limits for
the service of ``[oslo_limit] endpoint_id``, read through oslo.limit).

Keystone is never asked on the write path. A process reads every limit of
its service at first use (that one read waits), then a thread of its own
reads them again every ``[quota] refresh_seconds``, so a limit changed in
Keystone holds within that time. When a read fails the last limits keep
holding, for ``[quota] stale_seconds`` past the refresh that failed;
after that ``current()`` raises ``Unavailable`` until Keystone answers
again (the judgement then refuses what would grow a project's usage, see
``judgement``).
"""

import collections
import gc
import os
import threading
import time

from oslo_log import log as logging

from allocworker.conf import CONF

LOG = logging.getLogger(__name__)

# How soon a failed read is tried again (at most refresh_seconds).
RETRY_SECONDS = 2.0


class Unavailable(Exception):
    """No limits read recently enough to judge by."""


class Limits(collections.namedtuple('Limits',
                                    ['registered', 'projects', 'read_at'])):
    """What one read found: {resource: default} registered limits,
    {project_id: {resource: limit}} the limits of each project that has
    some of its own, over the registered defaults, and when (monotonic
    seconds)."""

    @classmethod
    def read(cls, registered, projects, read_at):
        """Of Keystone's registered and project limits as read."""
        return cls(dict(registered), {
            p: dict(registered, **found) for p, found in projects.items()},
            read_at)

    def of(self, project_id):
        """{resource: limit} that apply to ``project_id`` (not to be
        changed: it may be shared). A resource with neither a registered
        nor a project limit is not limited (and not listed)."""
        return self.projects.get(project_id, self.registered)


class Source(object):
    """Limits read by ``fetch() -> (registered, projects)``, kept and
    refreshed by a thread of this process."""

    def __init__(self, fetch, clock=time.monotonic):
        self._fetch = fetch
        self._clock = clock
        self._lock = threading.Lock()
        self._limits = None
        self._failed_since = None
        self._thread = None
        self._stopped = threading.Event()

    def current(self):
        """The Limits to judge by, or Unavailable."""
        limits = self._limits
        if limits is None:
            with self._lock:
                # Never read: read now, unless a read failed a moment ago
                # (then every write would wait for a Keystone that is down).
                if self._limits is None and (
                        self._failed_since is None or
                        self._clock() - self._last_try > RETRY_SECONDS):
                    self._read()
                limits = self._limits
            if limits is None:
                raise Unavailable('the limits were never read (%s)'
                                  % self._failure)
            self._start()
        age = self._clock() - limits.read_at
        if age > CONF.quota.refresh_seconds + CONF.quota.stale_seconds:
            raise Unavailable('the limits were read %d s ago and could not '
                              'be read again since (%s)'
                              % (age, self._failure))
        return limits

    def refresh(self):
        """Read the limits now (the refresher's step; tests call it)."""
        with self._lock:
            self._read()

    def _read(self):
        started = self._last_try = self._clock()
        try:
            registered, projects = self._fetch()
        except Exception as exc:
            self._failure = '%s: %s' % (type(exc).__name__, exc)
            if self._failed_since is None:
                self._failed_since = started
                LOG.warning('could not read project limits (%s); the last '
                            'ones read keep holding for [quota] '
                            'stale_seconds', self._failure)
            return False
        if self._failed_since is not None:
            LOG.info('project limits read again after %.0f s',
                     started - self._failed_since)
        self._failed_since = None
        self._failure = None
        self._limits = Limits.read(registered, projects, started)
        if self.after_first_read is not None:
            settle, self.after_first_read = self.after_first_read, None
            settle()
        return True

    _failure = None
    _last_try = None
    after_first_read = None

    def _start(self):
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._refresh_forever,
                        name='allocworker-limits', daemon=True)
                    self._thread.start()

    def _refresh_forever(self):
        wait = 0 if self._limits is None else CONF.quota.refresh_seconds
        while not self._stopped.wait(wait):
            ok = self._read_guarded()
            wait = CONF.quota.refresh_seconds if ok else min(
                RETRY_SECONDS, CONF.quota.refresh_seconds)

    def _read_guarded(self):
        try:
            with self._lock:
                return self._read()
        except Exception:
            LOG.exception('reading project limits failed')
            return False

    def stop(self):
        self._stopped.set()


class KeystoneLimits(object):
    """``fetch`` of the ``unified_limits`` driver: (registered, projects)
    of this service, read through oslo.limit.

    oslo.limit's public calls read registered limits whole but project
    limits one project at a time; every project's limits of the service
    are read in one request instead, through the Keystone connection and
    the endpoint's service and region that its enforcer resolved (pinned
    oslo.limit 2.12; see constraints.txt). The enforcer is kept between
    reads, and made again after a failed one."""

    def __init__(self):
        self._enforcer = None

    def __call__(self):
        try:
            return self._read(self._enforcer or self._enforcer_now())
        except Exception:
            self._enforcer = None
            raise

    def _enforcer_now(self):
        from oslo_limit import limit as oslo_limit  # only this driver's
        self._enforcer = oslo_limit.Enforcer(
            lambda project_id, names: {}, cache=False)
        return self._enforcer

    @staticmethod
    def _read(enforcer):
        registered = dict(enforcer.get_registered_limits(None))
        # The service and region its enforcer resolved from [oslo_limit]
        # (by endpoint id, or by service type, name and region): oslo.limit
        # has no public accessor, and resolving them again here would copy
        # its lookup rules. Everything else is public: the connection and
        # openstacksdk's limits call.
        utils = enforcer.model._utils
        projects = collections.defaultdict(dict)
        for found in enforcer.connection.limits(
                service_id=utils._service_id, region_id=utils._region_id):
            projects[found.project_id][found.resource_name] = \
                found.resource_limit
        return registered, projects


_sources = {}


def source():
    """This process's Source, or None when limits are off (``noop``)."""
    driver = CONF.quota.driver
    if driver == 'noop':
        return None
    # Threads do not survive a fork: each worker process keeps its own.
    key = (driver, os.getpid())
    found = _sources.get(key)
    if found is None:
        found = _sources[key] = Source(KeystoneLimits())
    return found


def start_reading():
    """Begin reading this process's limits in the background (a worker
    process calls this as it starts, so its first write does not wait
    for Keystone); nothing when limits are off."""
    found = source()
    if found is not None:
        found.after_first_read = _freeze_what_lives
        found._start()


def _freeze_what_lives():
    """Keep what the first read loaded (the Keystone client and its
    modules, 40% more objects than the worker held) out of the garbage
    collector's walks, as the worker does with everything alive at its
    start (``service._child``): read after that freeze, they made every
    collection walk them, and a single allocate cost its worker 1.0 ms of
    CPU more with limits on than off instead of 0.3 (session 14)."""
    gc.collect()
    gc.freeze()


def use(fetch):
    """Judge by ``fetch`` in this process from now on (tests and
    benchmarks that bring their own limits); returns the Source."""
    found = _sources[(CONF.quota.driver, os.getpid())] = Source(fetch)
    return found
