"""Authorization: the one place that asks oslo.policy.

Service-layer functions call ``allowed`` or ``check`` with the request
context and the target of what they are about to do. A ``None`` context
is an in-process caller that was trusted already (the operator's CLI and
tests of the service layer).
"""

import os
import threading
import time

from oslo_log import log as logging
from oslo_policy import policy as oslo_policy

from allocworker import codes
from allocworker.conf import CONF
from allocworker import policies

LOG = logging.getLogger(__name__)

_lock = threading.Lock()
_enforcer = None
# Decisions by (call, target project, caller's credentials), for the life
# of the enforcer: a decision depends on nothing else, and asking
# oslo.policy costs a stat of every policy file per check. The files are
# looked at once a ``_RECHECK_SECONDS`` instead, and any change to them
# forgets every decision.
_decisions = {}
_DECISIONS_AT_MOST = 10000
_RECHECK_SECONDS = 1.0
_files_seen = [None, 0.0]  # (fingerprint, monotonic time of the look)
# A project no caller belongs to: a rule that passes for it does not
# depend on the caller's project (admin and service callers).
_NO_PROJECT = '\x00no-project'


def get_enforcer():
    """The process's enforcer (also the oslopolicy-* generators' hook)."""
    global _enforcer
    with _lock:
        if _enforcer is None:
            _enforcer = oslo_policy.Enforcer(CONF)
            _enforcer.register_defaults(policies.list_rules())
        return _enforcer


def reset():
    global _enforcer
    with _lock:
        if _enforcer is not None:
            _enforcer.clear()
        _enforcer = None
        _decisions.clear()
        _files_seen[:] = [None, 0.0]


def _policy_files(enforcer):
    """(path, mtime) of the policy file and of every file in the policy
    directories, as oslo.policy would find them now."""
    found = []
    paths = [enforcer.policy_file] + list(CONF.oslo_policy.policy_dirs)
    for path in paths:
        try:
            path = enforcer._get_policy_path(path)
        except Exception:  # not found: absent files count as absent
            continue
        names = (sorted(os.path.join(path, n) for n in os.listdir(path))
                 if os.path.isdir(path) else [path])
        for name in names:
            try:
                found.append((name, os.stat(name).st_mtime_ns))
            except OSError:
                continue
    return tuple(found)


def _forget_if_files_changed(enforcer):
    now = time.monotonic()
    if now - _files_seen[1] < _RECHECK_SECONDS:
        return
    fingerprint = _policy_files(enforcer)
    with _lock:
        if fingerprint != _files_seen[0]:
            _decisions.clear()
        _files_seen[:] = [fingerprint, now]


def _decide(context, call, project_id):
    credentials = context.to_policy_values()
    credentials['is_admin'] = bool(context.is_admin)
    key = (call, project_id, tuple(sorted(
        (name, tuple(value) if isinstance(value, list) else value)
        for name, value in credentials.items())))
    enforcer = get_enforcer()
    _forget_if_files_changed(enforcer)
    try:
        decision = _decisions.get(key)
    except TypeError:  # a credential oslo.context may add that is a dict
        key, decision = None, None
    if decision is None:
        target = {'project_id': project_id, 'user_id': context.user_id}
        decision = enforcer.authorize('allocworker:%s' % call, target,
                                      credentials, do_raise=False)
        if len(_decisions) > _DECISIONS_AT_MOST:
            _decisions.clear()
        if key is not None:
            _decisions[key] = decision
    return decision


def allowed(context, call, project_id=None):
    if context is None:
        return True
    # One request asks about the same few targets many times (a batch of
    # items of one project); decide each once per request.
    memo = context.__dict__.setdefault('_allocworker_policy', {})
    if (call, project_id) not in memo:
        memo[(call, project_id)] = _decide(context, call, project_id)
    return memo[(call, project_id)]


def sees_every_project(context, call):
    """True when ``call`` is allowed whatever the target's project."""
    return allowed(context, call, _NO_PROJECT)


def denied(context, call, what):
    """The 403 fault for ``what``, logged for the audit trail."""
    LOG.warning('denied %s on %s for user %s project %s roles %s '
                '(request %s)', call, what,
                getattr(context, 'user_id', None),
                getattr(context, 'project_id', None),
                ','.join(getattr(context, 'roles', []) or []),
                getattr(context, 'request_id', None))
    return codes.Fault(codes.FORBIDDEN, 'policy allocworker:%s does not '
                       'allow this caller to act on %s' % (call, what))


def check(context, call, what, project_id=None):
    """Raise the 403 fault unless ``call`` is allowed on the target."""
    if not allowed(context, call, project_id):
        raise denied(context, call, what)
