"""JSON schemas of Placement's request bodies and query strings, per
microversion. Validation messages come from jsonschema, as Placement's do,
because clients and Placement's own tests match on their wording."""

import copy

UUID_PATTERN = ('^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?'
                '[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$')
CLASS_PATTERN = '^[A-Z0-9_]+$'
UUID = {'type': 'string', 'format': 'uuid'}
MAX_INT = 2147483647
ID_STRING = {'type': 'string', 'minLength': 1, 'maxLength': 255}
CONSUMER_TYPE = {'type': 'string', 'pattern': CLASS_PATTERN,
                 'minLength': 1, 'maxLength': 255}


def _object(properties, required=(), extra=False):
    schema = {'type': 'object', 'properties': properties,
              'additionalProperties': extra}
    if required:
        schema['required'] = list(required)
    return schema


def create_provider(request):
    properties = {'name': {'type': 'string', 'minLength': 1,
                           'maxLength': 200},
                  'uuid': UUID}
    if request.at_least(14):
        properties['parent_provider_uuid'] = {'anyOf': [UUID,
                                                        {'type': 'null'}]}
    return _object(properties, ['name'])


def update_provider(request):
    schema = create_provider(request)
    del schema['properties']['uuid']
    return schema


def list_providers(request):
    properties = {'name': {'type': 'string'}, 'uuid': UUID}
    if request.at_least(3):
        properties['member_of'] = {'type': 'string'}
    if request.at_least(4):
        properties['resources'] = {'type': 'string'}
    if request.at_least(14):
        properties['in_tree'] = UUID
    if request.at_least(18):
        properties['required'] = {'type': 'string'}
    return _object(properties)


# -- inventories ---------------------------------------------------------

INVENTORY_FIELDS = {
    'total': {'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
    'reserved': {'type': 'integer', 'minimum': 0, 'maximum': MAX_INT},
    'min_unit': {'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
    'max_unit': {'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
    'step_size': {'type': 'integer', 'minimum': 1, 'maximum': MAX_INT},
    'allocation_ratio': {'type': 'number', 'minimum': 0,
                         'maximum': 3.40282e+38},
}
GENERATION = {'type': 'integer'}


def inventory():
    """One inventory inside PUT .../inventories."""
    return _object(copy.deepcopy(INVENTORY_FIELDS), ['total'])


def post_inventory():
    properties = copy.deepcopy(INVENTORY_FIELDS)
    properties['resource_class'] = {'type': 'string',
                                    'pattern': CLASS_PATTERN}
    return _object(properties, ['total', 'resource_class'])


def put_inventory():
    properties = copy.deepcopy(INVENTORY_FIELDS)
    properties['resource_provider_generation'] = GENERATION
    return _object(properties, ['total', 'resource_provider_generation'])


def put_inventories():
    return _object({
        'resource_provider_generation': GENERATION,
        'inventories': {'type': 'object', 'patternProperties': {
            CLASS_PATTERN: inventory()}, 'additionalProperties': False},
    }, ['resource_provider_generation', 'inventories'])


# -- allocations ---------------------------------------------------------

RESOURCES = {'type': 'object', 'minProperties': 1,
             'patternProperties': {CLASS_PATTERN: {
                 'type': 'integer', 'minimum': 1, 'maximum': MAX_INT}},
             'additionalProperties': False}


# Which providers met which request group (1.34): checked for form, then
# dropped, as Placement does; nothing reads them back.
MAPPINGS = {'type': 'object', 'minProperties': 1, 'patternProperties': {
    '^[a-zA-Z0-9_-]{0,64}$': {'type': 'array', 'minItems': 1,
                              'items': UUID}}}


def _list_allocations():
    return {'type': 'array', 'minItems': 1, 'items': _object({
        'resource_provider': _object({'uuid': UUID}, ['uuid']),
        'resources': RESOURCES}, ['resource_provider', 'resources'])}


def _dict_allocations(request):
    allocations = {'type': 'object', 'patternProperties': {UUID_PATTERN: {
        'type': 'object', 'properties': {
            'resources': RESOURCES,
            # Clients echo what GET answered; Placement ignores it.
            'generation': GENERATION},
        'required': ['resources'], 'additionalProperties': False}},
        'additionalProperties': False}
    if not request.at_least(28):
        allocations['minProperties'] = 1
    return allocations


def _consumer_fields(request, allocations):
    properties = {'allocations': allocations}
    required = ['allocations']
    if request.at_least(8):
        properties.update(project_id=ID_STRING, user_id=ID_STRING)
        required += ['project_id', 'user_id']
    if request.at_least(28):
        properties['consumer_generation'] = {'type': ['integer', 'null']}
        required.append('consumer_generation')
    if request.at_least(34):
        properties['mappings'] = MAPPINGS
    if request.at_least(38):
        properties['consumer_type'] = CONSUMER_TYPE
        required.append('consumer_type')
    return properties, required


def put_allocations(request):
    if request.at_least(12):
        allocations = _dict_allocations(request)
    else:
        allocations = _list_allocations()
    properties, required = _consumer_fields(request, allocations)
    return _object(properties, required)


def post_allocations(request):
    allocations = _dict_allocations(request)
    # A consumer may be cleared in the same request: {} is allowed here.
    allocations.pop('minProperties', None)
    properties, required = _consumer_fields(request, allocations)
    return {'type': 'object', 'minProperties': 1,
            'patternProperties': {UUID_PATTERN: _object(properties,
                                                        required)},
            'additionalProperties': False}


def usages(request):
    properties = {'project_id': ID_STRING, 'user_id': ID_STRING}
    if request.at_least(38):
        properties['consumer_type'] = {'type': 'string'}
    return _object(properties, ['project_id'])


# -- resource classes ----------------------------------------------------

def resource_class():
    return _object({'name': {'type': 'string', 'pattern':
                             '^CUSTOM_[A-Z0-9_]+$', 'maxLength': 255}},
                   ['name'])


# -- traits and aggregates -----------------------------------------------

def list_traits():
    return _object({'name': {'type': 'string'},
                    'associated': {'type': 'string'}})


def put_provider_traits():
    return _object({
        'traits': {'type': 'array', 'uniqueItems': True, 'items': {
            'type': 'string', 'pattern': CLASS_PATTERN}},
        'resource_provider_generation': GENERATION},
        ['traits', 'resource_provider_generation'])


def put_aggregates(request):
    uuids = {'type': 'array', 'uniqueItems': True, 'items': UUID}
    if not request.at_least(19):
        return uuids
    return _object({'aggregates': uuids,
                    'resource_provider_generation': GENERATION},
                   ['aggregates', 'resource_provider_generation'])


# -- reshaper ------------------------------------------------------------

def reshaper(request):
    consumers = post_allocations(request)
    consumers.pop('minProperties', None)
    return _object({
        'inventories': {'type': 'object', 'patternProperties': {
            UUID_PATTERN: put_inventories()},
            'additionalProperties': False},
        'allocations': consumers}, ['inventories', 'allocations'])
