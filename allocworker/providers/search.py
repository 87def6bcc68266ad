"""Finding providers by name, uuid, tree, aggregates, traits and room for
resources (Placement's ``GET /resource_providers`` filters). The filters
are a single-provider ``Group`` of the request syntax
(``scheduling/request.py``), judged in SQL (``db/search/candidates.py``)."""

from allocworker import bindings
from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db.catalog import providers as db_providers
from allocworker.db.catalog import resource_classes as db_classes
from allocworker.db.catalog import traits as db_traits
from allocworker.db.search import candidates as db_candidates
from allocworker.db.search import filters as db_filters
from allocworker import policy
from allocworker.providers import rules as providers
from allocworker import validation


def find_providers(context, name=None, uuid=None, group=None):
    """Provider items (as get_providers', by name) passing every filter:
    the provider itself carries ``group``'s traits, is in its aggregates,
    has room for its resources, and is in the tree of its ``in_tree``;
    only the partitions ``context`` sees (``bindings``)."""
    if uuid is not None:
        uuid = validation.uuid(uuid, 'uuid')
    policy.check(context, 'get_providers', 'providers')
    with (db.stale_reader() if CONF.api.stale_reads else
          db.reader()) as conn:
        matching = _matching(conn, name, uuid, group,
                             bindings.seen(context))
        if not matching:
            return []
        described = db_providers.describe(conn, matching)
    return [providers.described_item(p, classes) for p, classes in described]


def _matching(conn, name, uuid, group, partitions):
    if group is None:
        return db_candidates.matching_providers(
            conn, db_filters.NO_FILTERS, name=name, uuid=uuid,
            partitions=partitions)
    traits = group.required | group.forbidden | frozenset().union(
        *group.any_traits)
    trait_ids = db_traits.ids_by_name(conn, traits)
    unknown = sorted(traits - set(trait_ids))
    if unknown:
        raise codes.Fault(codes.TRAIT_NOT_IN_BODY, 'No such trait(s): %s.'
                          % ', '.join(unknown))
    class_ids = db_classes.ids_by_name(conn, sorted(group.resources))
    for class_name in sorted(group.resources):
        if class_name not in class_ids:
            raise codes.Fault(codes.RESOURCE_CLASS_NOT_FOUND,
                              'No such resource class %s.' % class_name)
    in_tree = None
    if group.in_tree is not None:
        anchor = db_candidates.node(conn, group.in_tree)
        if anchor is None:
            return []
        in_tree = anchor.root_id
    filters = db_filters.Filters(
        [trait_ids[t] for t in group.required],
        [[trait_ids[t] for t in names] for names in group.any_traits],
        [trait_ids[t] for t in group.forbidden],
        group.member_of, group.forbidden_aggregates)
    return db_candidates.matching_providers(
        conn, filters, [(class_ids[n], amount)
                        for n, amount in sorted(group.resources.items())],
        in_tree, name, uuid, partitions)
