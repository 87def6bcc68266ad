"""Authorization: the one place that asks oslo.policy.

Service-layer functions call ``allowed`` or ``check`` with the request
context and the target of what they are about to do. A ``None`` context
is an in-process caller that was trusted already (the operator's CLI and
tests of the service layer).
"""

import threading

from oslo_log import log as logging
from oslo_policy import policy as oslo_policy

from allocworker import codes
from allocworker.conf import CONF
from allocworker import policies

LOG = logging.getLogger(__name__)

_lock = threading.Lock()
_enforcer = None
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


def allowed(context, call, project_id=None):
    if context is None:
        return True
    # One request asks about the same few targets many times (a batch of
    # items of one project); decide each once per request.
    memo = context.__dict__.setdefault('_allocworker_policy', {})
    if (call, project_id) not in memo:
        target = {'project_id': project_id, 'user_id': context.user_id}
        credentials = context.to_policy_values()
        credentials['is_admin'] = bool(context.is_admin)
        memo[(call, project_id)] = get_enforcer().authorize(
            'allocworker:%s' % call, target, credentials, do_raise=False)
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
