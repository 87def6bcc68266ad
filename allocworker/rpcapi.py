"""Client side of the allocworker RPC API: import this to call the worker.

API version history:

    * 1.0 - Initial version: allocate, get_allocations, list_allocations,
            list_consumers, create_provider, delete_provider, get_providers,
            set_inventories, get_usages, create_resource_class,
            list_resource_classes.
    * 1.1 - external_event (call or cast), wait_for_events.
    * 1.2 - Consumer groups: create_group, delete_group, add_members,
            remove_members, get_groups; allocate items may name a
            group_uuid to join.
    * 1.3 - Scheduling: get_allocation_candidates, claim (find where a
            consumer fits and write it there in one transaction).
    * 1.4 - Project limits: get_limits; allocate and claim items may
            answer 403 quota.exceeded ([quota] driver = unified_limits).
    * 1.5 - Failure domains: set_topology_level, get_topology,
            delete_topology_level, set_provider_traits,
            set_provider_aggregates, update_group; create_group takes
            ``rules``; get_groups items add ``rules`` and ``domains``.
    * 1.6 - Partitions: create_provider takes ``partition``; provider
            items show ``partition``; allocate and claim items may
            answer 409 partition.mismatch; group rules may name scope
            ``partition`` (create_group and update_group send such
            rules at 1.6); get_topology lists level ``partition``.

Every method answers with the envelope of design §3:
``{"status", "request_id", "items": [...]}``. Only infrastructure failures
raise (``oslo_messaging.MessagingTimeout`` when no worker answered in time).

No method blocks longer than its timeout plus ``[worker] call_grace``
(default 1 s), even while a broker node hangs: past that it raises
``MessagingTimeout`` and leaves the call to end in the background (see
doc/deployment.md, "A hung broker node"). As after any timeout, the call
may still take effect; send keyed batches again (``retries=``).

``context`` is an ``oslo_context.RequestContext`` or the dict its
``to_dict()`` makes. During a rolling upgrade set
``[upgrade_levels] allocworker`` to the oldest worker's version (or a
release alias below) so clients never send what old workers cannot take.
"""

import functools

import kombu.exceptions
import oslo_messaging as messaging
import tenacity

from allocworker.conf import CONF
from allocworker.metrics import tracing
from allocworker import rpc

VERSION = '1.6'

# A call that may not have reached a worker, or whose answer did not
# reach us: a keyed batch may be sent again.
UNANSWERED = (messaging.MessagingTimeout, messaging.MessageDeliveryFailure,
              kombu.exceptions.OperationalError)

# Release names operators may put in [upgrade_levels] allocworker.
VERSION_ALIASES = {
    '2026.2': '1.0',
    # allocworker's own releases, by the newest RPC version they serve.
    '0.1': '1.2',
    '0.2': '1.3',
    '0.3': '1.4',
    '0.4': '1.6',
}


def _rules_version(rules):
    """The version a call carrying group ``rules`` is sent at: 1.6 when
    one names scope ``partition``, which workers of 1.5 refuse and would
    judge without domains, so a client capped below 1.6 refuses it
    before sending."""
    named = isinstance(rules, list) and any(
        isinstance(r, dict) and r.get('scope') == 'partition'
        for r in rules)
    return '1.6' if named else '1.5'


@functools.lru_cache(maxsize=None)
def _sending(attempts):
    """A call sent up to ``attempts`` times while unanswered, built once
    per count (tenacity keeps each thread's attempt state apart)."""
    # Sent again at once: a timed-out attempt already waited its timeout.
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(UNANSWERED),
        stop=tenacity.stop_after_attempt(attempts), reraise=True)


class AllocWorkerAPI(object):
    """One client per process is enough; it is safe to share across threads.

    ``timeout`` (seconds) overrides ``[DEFAULT] rpc_response_timeout`` for
    every call of this client; each method also takes its own ``timeout``.
    """

    def __init__(self, transport=None, timeout=None, topic=None):
        cap = CONF.upgrade_levels.allocworker
        cap = VERSION_ALIASES.get(cap, cap)
        self.client = rpc.get_client(topic or CONF.worker.topic, VERSION,
                                     version_cap=cap, timeout=timeout,
                                     transport=transport)

    def _prepare(self, version, timeout):
        """A call context and the seconds its caller may wait in all."""
        # An explicit None would override the client's own timeout.
        options = {'timeout': timeout} if timeout is not None else {}
        cctxt = self.client.prepare(version=version, **options)
        timeout = cctxt.timeout
        if timeout is None:
            timeout = cctxt.conf.rpc_response_timeout
        return cctxt, timeout + CONF.worker.call_grace

    def _call(self, context, method, version='1.0', timeout=None, **kwargs):
        cctxt, deadline = self._prepare(version, timeout)
        with tracing.span('rpc', method=method):
            # Serialized here: the call is sent from another thread, and
            # the trace lives in this one.
            context = rpc.ContextSerializer().serialize_context(context)
            return rpc.within(deadline, cctxt.call, context, method,
                              **kwargs)

    # 1.0

    def allocate(self, context, items, atomic=False, timeout=None,
                 retries=0):
        """Replace consumers' allocations.

        With ``retries`` > 0 a call that timed out is sent again, up to
        that many times, but only when every item carries an
        ``idempotency_key``: the worker then answers a repeat with the
        first answer and writes nothing twice.
        """
        # Joining a group on allocation needs workers at 1.2 or later.
        joins = any(isinstance(i, dict) and i.get('group_uuid')
                    for i in items or ())
        return self._call_keyed(context, 'allocate', items, atomic,
                                '1.2' if joins else '1.0', timeout, retries)

    def _call_keyed(self, context, method, items, atomic, version, timeout,
                    retries):
        """Send again after a timeout, up to ``retries`` times, only when
        every item carries an idempotency key (a repeat writes nothing)."""
        keyed = bool(items) and all(
            isinstance(i, dict) and i.get('idempotency_key') for i in items)
        return _sending(1 + (retries if keyed else 0))(
            self._call, context, method, items=items, atomic=atomic,
            version=version, timeout=timeout)

    def get_allocations(self, context, consumer_uuids, timeout=None):
        return self._call(context, 'get_allocations',
                          consumer_uuids=consumer_uuids, timeout=timeout)

    def list_allocations(self, context, provider_uuid, timeout=None):
        return self._call(context, 'list_allocations',
                          provider_uuid=provider_uuid, timeout=timeout)

    def list_consumers(self, context, project_id=None, limit=1000,
                       marker=None, timeout=None):
        return self._call(context, 'list_consumers', project_id=project_id,
                          limit=limit, marker=marker, timeout=timeout)

    def create_provider(self, context, uuid, name, parent_uuid=None,
                        partition=None, timeout=None):
        """``partition`` (from 1.6; None: the parent's, or ``default``)
        is sent only when given, so a call without it still reaches
        workers of 1.0."""
        if partition is None:
            return self._call(context, 'create_provider', uuid=uuid,
                              name=name, parent_uuid=parent_uuid,
                              timeout=timeout)
        return self._call(context, 'create_provider', version='1.6',
                          uuid=uuid, name=name, parent_uuid=parent_uuid,
                          partition=partition, timeout=timeout)

    def delete_provider(self, context, uuid, timeout=None):
        return self._call(context, 'delete_provider', uuid=uuid,
                          timeout=timeout)

    def get_providers(self, context, uuids=None, timeout=None):
        return self._call(context, 'get_providers', uuids=uuids,
                          timeout=timeout)

    def set_inventories(self, context, provider_uuid, provider_generation,
                        inventories, force=False, timeout=None):
        return self._call(context, 'set_inventories',
                          provider_uuid=provider_uuid,
                          provider_generation=provider_generation,
                          inventories=inventories, force=force,
                          timeout=timeout)

    def get_usages(self, context, provider_uuids, timeout=None):
        return self._call(context, 'get_usages',
                          provider_uuids=provider_uuids, timeout=timeout)

    def create_resource_class(self, context, name, timeout=None):
        return self._call(context, 'create_resource_class', name=name,
                          timeout=timeout)

    def list_resource_classes(self, context, timeout=None):
        return self._call(context, 'list_resource_classes', timeout=timeout)

    # 1.1

    def external_event(self, context, events, cast=False, timeout=None):
        """Record events; with ``cast=True`` fire and forget (None)."""
        cctxt, deadline = self._prepare('1.1', timeout)
        send = cctxt.cast if cast else cctxt.call
        return rpc.within(deadline, send, context, 'external_event',
                          events=events)

    def wait_for_events(self, context, consumer_uuid, names, timeout):
        """Wait up to ``timeout`` seconds (the worker caps it below the RPC
        timeout) for one event per name ('name' or 'name:tag')."""
        return self._call(context, 'wait_for_events', version='1.1',
                          consumer_uuid=consumer_uuid, names=names,
                          timeout=timeout)

    # 1.2

    def create_group(self, context, uuid, name, policy=None,
                     max_per_root=None, project_id=None, rules=None,
                     timeout=None):
        """A group of the 1.0 ``policy`` (with ``max_per_root``), or, from
        1.5, of ``rules`` (design §3, "Failure domains")."""
        if rules is None:
            return self._call(context, 'create_group', version='1.2',
                              uuid=uuid, name=name, policy=policy,
                              max_per_root=max_per_root,
                              project_id=project_id, timeout=timeout)
        return self._call(context, 'create_group',
                          version=_rules_version(rules), uuid=uuid,
                          name=name, project_id=project_id, rules=rules,
                          timeout=timeout)

    def delete_group(self, context, uuid, timeout=None):
        return self._call(context, 'delete_group', version='1.2', uuid=uuid,
                          timeout=timeout)

    def add_members(self, context, group_uuid, consumer_uuids, timeout=None):
        return self._call(context, 'add_members', version='1.2',
                          group_uuid=group_uuid,
                          consumer_uuids=consumer_uuids, timeout=timeout)

    def remove_members(self, context, group_uuid, consumer_uuids,
                       timeout=None):
        return self._call(context, 'remove_members', version='1.2',
                          group_uuid=group_uuid,
                          consumer_uuids=consumer_uuids, timeout=timeout)

    def get_groups(self, context, uuids, timeout=None):
        return self._call(context, 'get_groups', version='1.2', uuids=uuids,
                          timeout=timeout)

    # 1.3

    def get_allocation_candidates(self, context, request, limit=1000,
                                  timeout=None):
        """Where ``request`` (design §3's granular request) would fit:
        one item per candidate, none when nothing fits."""
        return self._call(context, 'get_allocation_candidates',
                          version='1.3', request=request, limit=limit,
                          timeout=timeout)

    def claim(self, context, items, atomic=False, timeout=None, retries=0):
        """Find where each item's ``request`` fits and allocate it there,
        in one transaction per item (one for all with ``atomic``).

        ``retries`` as for ``allocate``: a timed-out call is sent again
        only when every item carries an ``idempotency_key``.
        """
        return self._call_keyed(context, 'claim', items, atomic, '1.3',
                                timeout, retries)

    # 1.4

    def get_limits(self, context, project_id, timeout=None):
        """The project's limits beside what it uses: one item per
        limited resource, ``{"resource", "limit", "usage", "remaining"}``.
        """
        return self._call(context, 'get_limits', version='1.4',
                          project_id=project_id, timeout=timeout)

    # 1.5

    def set_topology_level(self, context, name, domains, timeout=None):
        """Map aggregates to domain labels: ``domains`` {aggregate uuid:
        label}, replacing the level's (created on first use)."""
        return self._call(context, 'set_topology_level', version='1.5',
                          name=name, domains=domains, timeout=timeout)

    def get_topology(self, context, names=None, timeout=None):
        return self._call(context, 'get_topology', version='1.5',
                          names=names, timeout=timeout)

    def delete_topology_level(self, context, name, timeout=None):
        return self._call(context, 'delete_topology_level', version='1.5',
                          name=name, timeout=timeout)

    def set_provider_traits(self, context, provider_uuid,
                            provider_generation, traits, timeout=None):
        return self._call(context, 'set_provider_traits', version='1.5',
                          provider_uuid=provider_uuid,
                          provider_generation=provider_generation,
                          traits=traits, timeout=timeout)

    def set_provider_aggregates(self, context, provider_uuid,
                                provider_generation, aggregates,
                                timeout=None):
        return self._call(context, 'set_provider_aggregates', version='1.5',
                          provider_uuid=provider_uuid,
                          provider_generation=provider_generation,
                          aggregates=aggregates, timeout=timeout)

    def update_group(self, context, uuid, generation, rules, force=False,
                     timeout=None):
        """Replace a group's rules under its ``generation``; ``force``
        takes them even where members' allocations break them."""
        return self._call(context, 'update_group',
                          version=_rules_version(rules), uuid=uuid,
                          generation=generation, rules=rules, force=force,
                          timeout=timeout)
