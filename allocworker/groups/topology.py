"""Topology levels (RPC 1.5): each maps Placement aggregates to the
labels of failure domains (racks, zones, sites) that group rules are
judged at. Levels ``root`` and ``partition`` (RPC 1.6: each partition a
domain, from the providers' own partitions) are built in and their
names reserved; ``get_topology`` lists ``partition``. Admin only."""

from oslo_db import exception as db_exc

from allocworker import codes
from allocworker.db import api as db
from allocworker.db.grouping import partition_domains as db_partition_domains
from allocworker.db.grouping import topology as db_topology
from allocworker.groups import rules as group_rules
from allocworker import items
from allocworker import notifications
from allocworker import policy
from allocworker import retry
from allocworker import validation


def _level_name(name, where='name'):
    name = group_rules.level_name(name, where)
    if name in group_rules.RESERVED_LEVELS:
        raise validation.invalid('%s %s is reserved' % (where, name))
    return name


def _not_found(name):
    return codes.Fault(codes.TOPOLOGY_NOT_FOUND,
                       'no topology level %s' % name)


def set_topology_level(context, name, domains):
    """Make ``domains`` ({aggregate uuid: label}) the level's, creating
    it on first use."""
    return items.one(context, {'name': items.echo(name)}, _set, context,
                     name, domains)


def _set(context, name, domains):
    name = _level_name(name)
    if not isinstance(domains, dict):
        raise validation.invalid('domains must be an object of aggregate '
                                 'uuid to label')
    parsed = {}
    for aggregate, label in domains.items():
        aggregate = validation.uuid(aggregate, 'domains')
        parsed[aggregate] = validation.string(
            label, 'domains.%s' % aggregate)
    policy.check(context, 'set_topology_level', 'topology level %s' % name)
    retry.write(_replace, name, parsed)
    item = _read(name)
    notifications.emit(context, notifications.TOPOLOGY_CHANGED, [{
        'name': name, 'generation': item['generation'],
        'domains': item['domains']}])
    return item


def _replace(name, domains):
    with db.writer() as conn:
        level = db_topology.lock(conn, name)
        if level is None:
            try:
                level = db_topology.create(conn, name)
            except db_exc.DBDuplicateEntry:
                raise db.ConcurrentUpdate('topology level %s' % name)
        db_topology.replace_domains(conn, level, domains)
        refuse_ambiguous(conn, [level], where='domains: ')


def refuse_ambiguous(conn, levels=None, root_ids=None, where=''):
    """409 topology.ambiguous_domain when a root of ``root_ids`` (every
    root when None) is in two domains of a level of ``levels`` (every
    level when None), as the write in ``conn`` leaves them."""
    if levels is None:
        levels = db_topology.levels(conn)
    names = {level.id: level.name for level in levels}
    found = db_topology.ambiguous(conn, set(names), root_ids)
    if found:
        level_id, root_uuid, labels = found[0]
        raise codes.Fault(
            codes.TOPOLOGY_AMBIGUOUS_DOMAIN,
            '%sroot provider %s would be in %d domains of topology level '
            '%s (%s); a root is in at most one'
            % (where, root_uuid, len(labels), names[level_id],
               ', '.join(labels)))


def _read(name):
    with db.snapshot() as conn:
        found = _items(conn, [name])
    if not found:
        raise _not_found(name)
    return found[0]


def _items(conn, names):
    """The items of the levels of ``names`` (every level when None), in
    name order."""
    levels = db_topology.levels(conn, names)
    ids = [level.id for level in levels]
    domains = db_topology.domains(conn, ids)
    roots = db_topology.root_counts(conn, ids)
    found = [{'name': level.name, 'domains': domains.get(level.id, {}),
              'generation': level.generation,
              'roots': dict(sorted(roots.get(level.id, {}).items())),
              'status': 200}
             for level in levels]
    if names is None or group_rules.PARTITION in names:
        found.append(_partition_level(conn))
    return sorted(found, key=lambda item: item['name'])


def _partition_level(conn):
    """Level partition as an item: no aggregate maps to it (``domains``
    is empty) and nothing sets it (no generation); ``roots`` counts the
    roots of each partition, ``shared`` aside (decision 0201)."""
    roots = db_partition_domains.root_counts(conn)
    return {'name': group_rules.PARTITION, 'domains': {},
            'generation': None, 'roots': dict(sorted(roots.items())),
            'status': 200}


def get_topology(context, names=None):
    """One item per level (every level when ``names`` is None), with the
    number of roots in each domain; 404 items for unknown names."""
    if names is not None and not isinstance(names, list):
        raise validation.invalid('names must be a list of level names')
    policy.check(context, 'get_topology', 'topology levels')
    wanted = None
    if names is not None:
        wanted = items.each(names, lambda value, index: (
            group_rules.level_name(value, 'names[%d]' % index)), 'names')
    with db.snapshot() as conn:
        found = {i['name']: i for i in _items(
            conn, None if wanted is None else items.valid(wanted))}
    if wanted is None:
        return list(found.values())
    return [w.item(name=items.echo(raw)) if isinstance(w, codes.Fault)
            else found.get(w) or _not_found(w).item(name=w)
            for raw, w in zip(names, wanted)]


def delete_topology_level(context, name):
    return items.one(context, {'name': items.echo(name)}, _delete, context,
                     name)


def _delete(context, name):
    name = _level_name(name)
    policy.check(context, 'delete_topology_level',
                 'topology level %s' % name)
    retry.write(_remove, name)
    notifications.emit(context, notifications.TOPOLOGY_CHANGED, [{
        'name': name, 'generation': None, 'domains': {}}])
    return {'name': name, 'status': 200}


def _remove(name):
    with db.writer() as conn:
        level = db_topology.lock(conn, name)
        if level is None:
            raise _not_found(name)
        users = db_topology.groups_naming(conn, name)
        if users:
            raise codes.Fault(
                codes.TOPOLOGY_IN_USE,
                'topology level %s is named by the rules of %d group(s), '
                'first %s' % (name, len(users), users[0]))
        db_topology.delete(conn, level)
