"""Rules for traits: the catalogue (standard os-traits names, created by
``db sync``, and operators' CUSTOM_ ones) and the traits each provider
carries. Setting a provider's traits is a write to the provider: it goes
under the provider's generation and moves it."""

import os_traits

from allocworker import bindings
from allocworker import codes
from allocworker.db import api as db
from allocworker.db.catalog import traits as db_traits
from allocworker import items
from allocworker import policy
from allocworker.providers import rules as providers
from allocworker import retry
from allocworker import validation


def list_traits(context, starts_with=None, names=None, associated=None):
    """Trait names, optionally by prefix, among ``names``, or by whether a
    provider carries them; one item per trait."""
    if names is not None:
        names = [validation.trait_name(n, 'names') for n in names]
    policy.check(context, 'list_traits', 'traits')
    with db.reader() as conn:
        found = db_traits.names(conn, starts_with, names, associated)
    return [{'name': n, 'status': 200} for n in found]


def create_trait(context, name):
    """Create a CUSTOM_ trait; creating an existing one is a no-op."""
    return items.one(context, {'name': items.echo(name)}, _create, context,
                     name)


def _create(context, name):
    name = validation.custom_name(name)
    policy.check(context, 'create_trait', 'trait %s' % name)
    created = retry.write(_insert, name)
    return {'name': name, 'created': created, 'status': 200}


def _insert(name):
    with db.writer() as conn:
        return db_traits.create(conn, name)


def delete_trait(context, name):
    return items.one(context, {'name': items.echo(name)}, _delete, context,
                     name)


def _delete(context, name):
    name = validation.trait_name(name, 'name')
    policy.check(context, 'delete_trait', 'trait %s' % name)
    if name in os_traits.get_traits():
        raise validation.invalid('Cannot delete standard trait %s.' % name)
    retry.write(_remove, name)
    return {'name': name, 'status': 200}


def _remove(name):
    with db.writer() as conn:
        trait_id = db_traits.ids_by_name(conn, [name]).get(name)
        if trait_id is None:
            raise codes.Fault(codes.TRAIT_NOT_FOUND,
                              'No such trait %s' % name)
        if db_traits.in_use(conn, trait_id):
            raise codes.Fault(codes.TRAIT_IN_USE,
                              'The trait %s is in use by a resource '
                              'provider.' % name)
        db_traits.delete(conn, trait_id)


def get_provider_traits(context, uuid):
    return items.one(context, {'uuid': items.echo(uuid)},
                     providers.facet_item, context, uuid, 'traits',
                     db_traits.of_providers)


def set_provider_traits(context, provider_uuid, provider_generation,
                        traits):
    """Replace the provider's traits (Placement's API: every trait must
    exist); the item carries the new generation."""
    return items.one(context, {'uuid': items.echo(provider_uuid)}, _set,
                     context, provider_uuid, provider_generation, traits)


def assign_traits(context, provider_uuid, provider_generation, traits):
    """RPC 1.5's ``set_provider_traits``: as Placement's, but a CUSTOM_
    trait is created on first use and an unknown standard one is the
    item's 400 invalid_request."""
    return items.one(context, {'uuid': items.echo(provider_uuid)}, _set,
                     context, provider_uuid, provider_generation, traits,
                     True)


def _set(context, uuid, provider_generation, traits, create_custom=False):
    uuid = validation.uuid(uuid, 'uuid')
    validation.integer(provider_generation, 'provider_generation',
                       minimum=0, maximum=None)
    if not isinstance(traits, list):
        raise validation.invalid('traits must be a list of trait names')
    traits = sorted({validation.trait_name(t, 'traits') for t in traits})
    policy.check(context, 'set_provider_traits', 'provider %s' % uuid)
    generation = retry.write(providers.replace_facet, uuid,
                             provider_generation,
                             _replacing(traits, create_custom),
                             bindings.seen(context))
    return {'uuid': uuid, 'generation': generation, 'traits': traits,
            'status': 200}


def _replacing(traits, create_custom):
    """The write that makes ``traits`` (names) the provider's traits."""
    def write(conn, provider_id):
        ids = db_traits.ids_by_name(conn, traits)
        unknown = [t for t in traits if t not in ids]
        if unknown and create_custom:
            standard = [t for t in unknown if not t.startswith('CUSTOM_')]
            if standard:
                raise validation.invalid(
                    'traits: no standard trait named %s' % standard[0])
            db_traits.ensure(conn, unknown)
            ids = db_traits.ids_by_name(conn, traits)
            unknown = []
        if unknown:
            raise codes.Fault(codes.TRAIT_NOT_IN_BODY,
                              'No such trait(s): %s' % ', '.join(unknown))
        db_traits.replace(conn, provider_id, set(ids.values()))
    return write
