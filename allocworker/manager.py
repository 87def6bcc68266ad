"""The RPC endpoint: unpack a call, hand it to the service layer (through
``calls.answer``), return the envelope of design §3. No rule lives here."""

import oslo_messaging as messaging

from allocworker import calls


class Manager(object):
    """allocworker RPC API, version 1.6 (history in rpcapi.py)."""

    target = messaging.Target(version='1.6')

    # 1.0

    def allocate(self, context, **kwargs):
        return calls.answer(context, 'allocate', kwargs)

    def get_allocations(self, context, **kwargs):
        return calls.answer(context, 'get_allocations', kwargs)

    def list_allocations(self, context, **kwargs):
        return calls.answer(context, 'list_allocations', kwargs)

    def list_consumers(self, context, **kwargs):
        return calls.answer(context, 'list_consumers', kwargs)

    def create_provider(self, context, **kwargs):
        return calls.answer(context, 'create_provider', kwargs)

    def delete_provider(self, context, **kwargs):
        return calls.answer(context, 'delete_provider', kwargs)

    def get_providers(self, context, **kwargs):
        return calls.answer(context, 'get_providers', kwargs)

    def set_inventories(self, context, **kwargs):
        return calls.answer(context, 'set_inventories', kwargs)

    def get_usages(self, context, **kwargs):
        return calls.answer(context, 'get_usages', kwargs)

    def create_resource_class(self, context, **kwargs):
        return calls.answer(context, 'create_resource_class', kwargs)

    def list_resource_classes(self, context, **kwargs):
        return calls.answer(context, 'list_resource_classes', kwargs)

    # 1.1

    def external_event(self, context, **kwargs):
        return calls.answer(context, 'external_event', kwargs)

    def wait_for_events(self, context, **kwargs):
        # Answered now, or parked by the RPC server until it can be.
        return calls.answer_later(context, 'wait_for_events', kwargs)

    # 1.2

    def create_group(self, context, **kwargs):
        return calls.answer(context, 'create_group', kwargs)

    def delete_group(self, context, **kwargs):
        return calls.answer(context, 'delete_group', kwargs)

    def add_members(self, context, **kwargs):
        return calls.answer(context, 'add_members', kwargs)

    def remove_members(self, context, **kwargs):
        return calls.answer(context, 'remove_members', kwargs)

    def get_groups(self, context, **kwargs):
        return calls.answer(context, 'get_groups', kwargs)

    # 1.3

    def get_allocation_candidates(self, context, **kwargs):
        return calls.answer(context, 'get_allocation_candidates', kwargs)

    def claim(self, context, **kwargs):
        return calls.answer(context, 'claim', kwargs)

    # 1.4

    def get_limits(self, context, **kwargs):
        return calls.answer(context, 'get_limits', kwargs)

    # 1.5

    def set_topology_level(self, context, **kwargs):
        return calls.answer(context, 'set_topology_level', kwargs)

    def get_topology(self, context, **kwargs):
        return calls.answer(context, 'get_topology', kwargs)

    def delete_topology_level(self, context, **kwargs):
        return calls.answer(context, 'delete_topology_level', kwargs)

    def set_provider_traits(self, context, **kwargs):
        return calls.answer(context, 'set_provider_traits', kwargs)

    def set_provider_aggregates(self, context, **kwargs):
        return calls.answer(context, 'set_provider_aggregates', kwargs)

    def update_group(self, context, **kwargs):
        return calls.answer(context, 'update_group', kwargs)

    # 1.6: create_provider (above) takes ``partition``; no new call.
