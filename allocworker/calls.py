"""Every call of the API, by name, and the one way it is answered.

The RPC manager and the HTTP mirror both answer through ``answer``, so a
call behaves the same whichever way it arrives: arguments bound to the
service-layer function (unknown or missing ones are a whole-request 400),
the design's envelope, the audit trail. A call that waits
(``wait_for_events``) reaches the RPC manager through ``answer_later``
instead, the same up to the wait itself, which the RPC server parks
rather than blocking a thread on it.
"""

import inspect

from oslo_log import log as logging

from allocworker.allocations import writes as allocations
from allocworker import audit
from allocworker import codes
from allocworker import rpc_server
from allocworker.allocations import consumers
from allocworker.events import external as events
from allocworker.events import waits
from allocworker.events import watch
from allocworker.groups import membership as groups
from allocworker.groups import report as group_report
from allocworker.groups import topology
from allocworker import metrics
from allocworker.metrics import tracing
from allocworker.providers import aggregates
from allocworker.providers import resource_classes
from allocworker.providers import rules as providers
from allocworker.providers import traits
from allocworker.quota import report as limits
from allocworker import retry
from allocworker.scheduling import claims
from allocworker.scheduling import lookup

LOG = logging.getLogger(__name__)

CALLS = {fn.__name__: fn for fn in (
    allocations.allocate, consumers.get_allocations,
    consumers.list_allocations, consumers.list_consumers,
    providers.create_provider, providers.delete_provider,
    providers.get_providers, providers.set_inventories,
    providers.get_usages, resource_classes.create_resource_class,
    resource_classes.list_resource_classes,
    events.external_event, waits.wait_for_events,
    groups.create_group, groups.delete_group, groups.add_members,
    groups.remove_members, group_report.get_groups,
    lookup.get_allocation_candidates, claims.claim,
    limits.get_limits,
    topology.set_topology_level, topology.get_topology,
    topology.delete_topology_level, groups.update_group,
    aggregates.set_provider_aggregates,
)}
# RPC 1.5's set_provider_traits creates CUSTOM_ traits on first use, as
# Placement's PUT .../traits does not.
CALLS['set_provider_traits'] = traits.assign_traits
# Calls the RPC server may answer later (rpc_server.Later): the function
# that starts one, with the arguments of the call's own in CALLS.
LATER = {'wait_for_events': watch.start_wait}
# Calls that only read: one that meets a database failing over runs
# again whole (it writes nothing; writes retry per transaction inside).
READS = frozenset([
    'get_allocations', 'list_allocations', 'list_consumers',
    'get_providers', 'get_usages', 'list_resource_classes', 'get_groups',
    'get_allocation_candidates', 'get_topology'])
# Binding arguments is per call; reading a signature is not.
_SIGNATURES = {name: inspect.signature(fn) for name, fn in CALLS.items()}
# (call, argument names) that bound: whether arguments bind depends on
# their names only, and binding costs more than a small call's own
# bookkeeping. At most 2**parameters sets per call, so it stays small.
_BINDS = set()


def _check_arguments(name, context, kwargs):
    """The whole-request 400 unless ``kwargs`` fit call ``name``."""
    names = (name, frozenset(kwargs))
    if names in _BINDS:
        return
    try:
        _SIGNATURES[name].bind(context, **kwargs)
    except TypeError as exc:
        raise codes.Fault(codes.INVALID_REQUEST, 'bad arguments: %s' % exc)
    _BINDS.add(names)


def answer(context, name, kwargs):
    """The envelope answering call ``name`` with keyword ``kwargs``."""
    started = metrics.started(name)
    with tracing.span('call', method=name):
        envelope = _answer(context, name, kwargs)
    metrics.answered(name, envelope, started)
    return envelope


def _answer(context, name, kwargs):
    request_id = getattr(context, 'request_id', None)
    service_call = CALLS[name]
    try:
        _check_arguments(name, context, kwargs)
        if name in READS:
            items = retry.read(service_call, context, **kwargs)
        else:
            items = service_call(context, **kwargs)
    except codes.Fault as fault:
        return codes.request_error(request_id, fault)
    except Exception:
        LOG.exception('%s failed unexpectedly (request %s)', name,
                      request_id)
        return codes.request_error(request_id, codes.unexpected(request_id))
    audit.record(context, name, items)
    return codes.envelope(request_id, items)


def answer_later(context, name, kwargs):
    """``answer`` for a call of LATER: its envelope if it can be answered
    at once, else an ``rpc_server.Later`` that makes it when it can (a
    parked waiter counts as one until then)."""
    started = metrics.started(name)
    request_id = getattr(context, 'request_id', None)
    try:
        _check_arguments(name, context, kwargs)
        waiting = LATER[name](context, **kwargs)
    except codes.Fault as fault:
        return _counted(name, codes.request_error(request_id, fault),
                        started)
    except Exception:
        LOG.exception('%s failed unexpectedly (request %s)', name,
                      request_id)
        return _counted(name, codes.request_error(
            request_id, codes.unexpected(request_id)), started)
    if waiting.answerable():
        return _finish(context, name, waiting, started)
    return rpc_server.Later(
        waiting, lambda done: _finish(context, name, done, started))


def _counted(name, envelope, started):
    metrics.answered(name, envelope, started)
    return envelope


def _finish(context, name, waiting, started):
    request_id = getattr(context, 'request_id', None)
    try:
        items = waiting.items()
    except Exception:
        LOG.exception('%s failed unexpectedly (request %s)', name,
                      request_id)
        return _counted(name, codes.request_error(
            request_id, codes.unexpected(request_id)), started)
    audit.record(context, name, items)
    return _counted(name, codes.envelope(request_id, items), started)
