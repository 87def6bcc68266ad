"""Finding providers by name, uuid, tree, aggregates, traits and room for
resources (Placement's ``GET /resource_providers`` filters)."""

from allocworker import codes
from allocworker import policy
from allocworker.providers import snapshot as provider_snapshot
from allocworker.providers import rules as providers
from allocworker import validation
from allocworker.db import api as db
from allocworker.db import traits as db_traits


def find_providers(context, name=None, uuid=None, in_tree=None,
                   member_of=(), required=(), forbidden=(), resources=None):
    """Provider items (as get_providers') passing every filter given.
    ``member_of`` is a list of aggregate sets the provider must each meet;
    ``resources`` {class: amount} the provider must have room for."""
    if uuid is not None:
        uuid = validation.uuid(uuid, 'uuid')
    if in_tree is not None:
        in_tree = validation.uuid(in_tree, 'in_tree')
    required, forbidden = set(required), set(forbidden)
    _known_traits(required | forbidden)
    policy.check(context, 'get_providers', 'providers')
    world = provider_snapshot.read()
    roots = None
    if in_tree is not None:
        anchor = world.providers.get(in_tree)
        roots = {anchor.root_uuid} if anchor else set()
    found = []
    for provider_uuid, provider in sorted(world.providers.items(),
                                          key=lambda kv: kv[1].name):
        traits = world.traits.get(provider_uuid, set())
        aggregates = world.aggregates.get(provider_uuid, set())
        if (name is not None and provider.name != name) or \
                (uuid is not None and provider_uuid != uuid) or \
                (roots is not None and provider.root_uuid not in roots) or \
                any(not (set(group) & aggregates) for group in member_of) or \
                not required <= traits or traits & forbidden:
            continue
        if resources and not all(
                world.can_supply(provider_uuid, cls, amount)
                for cls, amount in resources.items()):
            continue
        found.append(providers.described_item(
            provider, world.classes[provider_uuid]))
    return found


def _known_traits(names):
    if not names:
        return
    with db.reader() as conn:
        known = db_traits.ids_by_name(conn, names)
    unknown = sorted(n for n in names if n not in known)
    if unknown:
        raise codes.Fault(codes.TRAIT_NOT_IN_BODY, 'No such trait(s): %s.'
                          % ', '.join(unknown))
