"""oslo.policy defaults, one rule per RPC call (design §4).

``admin`` may do everything; ``service`` (other control-plane services)
may allocate for any project and read everything; any other caller may
read and write only consumers, groups and events of its own project, and
read providers and usages. Operators override any rule in the file named
by ``[oslo_policy] policy_file``.
"""

from oslo_policy import policy

# is_admin: a context the caller built with is_admin=True (the
# convention of oslo.context's own admin contexts).
ADMIN = 'role:admin or is_admin:True'
SERVICE = 'role:service'
ADMIN_OR_SERVICE = 'rule:admin or rule:service'
OWNER = 'project_id:%(project_id)s'
ADMIN_SERVICE_OR_OWNER = 'rule:admin or rule:service or rule:owner'
ANYONE = '@'

BASE = [
    policy.RuleDefault('admin', ADMIN, 'Cloud administrators.'),
    policy.RuleDefault('service', SERVICE,
                       'Other control-plane services (Nova and friends).'),
    policy.RuleDefault('owner', OWNER,
                       'The caller belongs to the project of the target.'),
]


def _rule(name, check, description, scope='one item'):
    return policy.DocumentedRuleDefault(
        name='allocworker:%s' % name, check_str=check,
        description='%s (checked per %s).' % (description, scope),
        operations=[{'method': 'RPC', 'path': name}])


CALLS = [
    _rule('allocate', ADMIN_SERVICE_OR_OWNER,
          "Replace a consumer's allocations; the target is the item's "
          'project and, for an existing consumer, its current project'),
    _rule('get_allocations', ADMIN_SERVICE_OR_OWNER,
          "Read a consumer's allocations; the target is its project"),
    _rule('list_allocations', ADMIN_SERVICE_OR_OWNER,
          'See one consumer in a provider listing', 'consumer listed'),
    _rule('list_consumers', ADMIN_SERVICE_OR_OWNER,
          'See one consumer in a consumer listing', 'consumer listed'),
    _rule('external_event', ADMIN_OR_SERVICE,
          'Record an external event about a consumer'),
    _rule('wait_for_events', ADMIN_SERVICE_OR_OWNER,
          "Wait for a consumer's events; the target is its project "
          '(none while the consumer does not exist)', 'call'),
    _rule('create_group', ADMIN_SERVICE_OR_OWNER,
          'Create a consumer group; the target is its project', 'call'),
    _rule('delete_group', ADMIN_SERVICE_OR_OWNER,
          'Delete a consumer group; the target is its project', 'call'),
    _rule('add_members', ADMIN_SERVICE_OR_OWNER,
          'Add members to a group; the target is the group project', 'call'),
    _rule('remove_members', ADMIN_SERVICE_OR_OWNER,
          'Remove members from a group; the target is the group project',
          'call'),
    _rule('update_group', ADMIN_SERVICE_OR_OWNER,
          "Replace a group's rules; the target is its project", 'call'),
    _rule('set_topology_level', ADMIN,
          'Map aggregates to the failure domains of a topology level',
          'call'),
    _rule('get_topology', ADMIN, 'Read topology levels and their domains',
          'call'),
    _rule('delete_topology_level', ADMIN,
          'Delete a topology level no group rule names', 'call'),
    _rule('get_groups', ADMIN_SERVICE_OR_OWNER,
          'Read a group; the target is its project', 'group'),
    _rule('get_allocation_candidates', ANYONE,
          'Ask where a request for resources would fit (reads providers '
          'and usages only)', 'call'),
    _rule('claim', ADMIN_SERVICE_OR_OWNER,
          'Find where a consumer fits and allocate it there; the target is '
          "the item's project (the allocate rule applies as well)"),
    _rule('get_limits', ADMIN_SERVICE_OR_OWNER,
          "Read a project's limits and what it uses; the target is that "
          'project', 'call'),
    _rule('create_provider', ADMIN, 'Create a resource provider', 'call'),
    _rule('delete_provider', ADMIN, 'Delete a resource provider', 'call'),
    _rule('update_provider', ADMIN,
          'Rename a resource provider or move it in the trees', 'call'),
    _rule('set_provider_partition', ADMIN,
          "Move a root provider's tree to another partition "
          '(allocworker-manage provider set-partition)', 'call'),
    _rule('set_inventories', ADMIN, "Replace a provider's inventories",
          'call'),
    _rule('create_resource_class', ADMIN, 'Create a custom resource class',
          'call'),
    _rule('delete_resource_class', ADMIN, 'Delete a custom resource class',
          'call'),
    _rule('update_resource_class', ADMIN, 'Rename a custom resource class',
          'call'),
    _rule('get_providers', ANYONE, 'Read providers and inventories',
          'call'),
    _rule('get_usages', ANYONE, "Read providers' usages", 'call'),
    _rule('project_usages', ADMIN_SERVICE_OR_OWNER,
          "Read what a project's consumers hold (Placement's GET /usages); "
          'the target is that project', 'call'),
    _rule('list_resource_classes', ANYONE, 'List resource classes', 'call'),
    _rule('list_traits', ANYONE, 'List traits', 'call'),
    _rule('create_trait', ADMIN, 'Create a custom trait', 'call'),
    _rule('delete_trait', ADMIN, 'Delete a custom trait', 'call'),
    _rule('set_provider_traits', ADMIN, "Replace a provider's traits",
          'call'),
    _rule('set_provider_aggregates', ADMIN,
          "Replace a provider's aggregates", 'call'),
    _rule('reshape', ADMIN, 'Move inventories and allocations together',
          'call'),
    _rule('placement_api', ADMIN_OR_SERVICE,
          "Use Placement's HTTP API in allocworker-api (every route but "
          "the version document), as Placement's own default allows only "
          'admins and services', 'request'),
    _rule('allocation_candidates', ANYONE,
          'List the ways a request for resources could be placed', 'call'),
]


def list_rules():
    return BASE + CALLS
