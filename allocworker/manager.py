"""The RPC endpoint: unpack a call, hand it to the service layer, answer
with the envelope of design §3. No rule lives here."""

import inspect

from oslo_log import log as logging
import oslo_messaging as messaging

from allocworker import allocations
from allocworker import audit
from allocworker import codes
from allocworker import events
from allocworker import groups
from allocworker import providers

LOG = logging.getLogger(__name__)


def _answer(context, service_call, kwargs):
    request_id = getattr(context, 'request_id', None)
    try:
        try:
            bound = inspect.signature(service_call).bind(context, **kwargs)
        except TypeError as exc:
            raise codes.Fault(codes.INVALID_REQUEST,
                              'bad arguments: %s' % exc)
        items = service_call(*bound.args, **bound.kwargs)
    except codes.Fault as fault:
        return codes.request_error(request_id, fault)
    except Exception:
        LOG.exception('%s failed unexpectedly (request %s)',
                      service_call.__name__, request_id)
        return codes.request_error(request_id, codes.unexpected(request_id))
    audit.record(context, service_call.__name__, items)
    return codes.envelope(request_id, items)


class Manager(object):
    """allocworker RPC API, version 1.2 (history in rpcapi.py)."""

    target = messaging.Target(version='1.2')

    def allocate(self, context, **kwargs):
        return _answer(context, allocations.allocate, kwargs)

    def get_allocations(self, context, **kwargs):
        return _answer(context, allocations.get_allocations, kwargs)

    def list_allocations(self, context, **kwargs):
        return _answer(context, allocations.list_allocations, kwargs)

    def list_consumers(self, context, **kwargs):
        return _answer(context, allocations.list_consumers, kwargs)

    def create_provider(self, context, **kwargs):
        return _answer(context, providers.create_provider, kwargs)

    def delete_provider(self, context, **kwargs):
        return _answer(context, providers.delete_provider, kwargs)

    def get_providers(self, context, **kwargs):
        return _answer(context, providers.get_providers, kwargs)

    def set_inventories(self, context, **kwargs):
        return _answer(context, providers.set_inventories, kwargs)

    def get_usages(self, context, **kwargs):
        return _answer(context, providers.get_usages, kwargs)

    def create_resource_class(self, context, **kwargs):
        return _answer(context, providers.create_resource_class, kwargs)

    def list_resource_classes(self, context, **kwargs):
        return _answer(context, providers.list_resource_classes, kwargs)

    # 1.1

    def external_event(self, context, **kwargs):
        return _answer(context, events.external_event, kwargs)

    def wait_for_events(self, context, **kwargs):
        return _answer(context, events.wait_for_events, kwargs)

    # 1.2

    def create_group(self, context, **kwargs):
        return _answer(context, groups.create_group, kwargs)

    def delete_group(self, context, **kwargs):
        return _answer(context, groups.delete_group, kwargs)

    def add_members(self, context, **kwargs):
        return _answer(context, groups.add_members, kwargs)

    def remove_members(self, context, **kwargs):
        return _answer(context, groups.remove_members, kwargs)

    def get_groups(self, context, **kwargs):
        return _answer(context, groups.get_groups, kwargs)
