"""Resource classes: creating and listing them (RPC calls), and changing
and removing custom ones (operations only Placement's HTTP API offers:
its DELETE, and its PUT rename before 1.7).

Inventories, allocations and usage counters refer to a class by its id,
so a rename carries them along in one statement: nothing else moves."""

from oslo_db import exception as db_exc
import os_resource_classes

from allocworker import codes
from allocworker.db import api as db
from allocworker.db.catalog import resource_classes as db_classes
from allocworker import items
from allocworker import policy
from allocworker import retry
from allocworker import validation


def _allowed_one(context, call, name, fn, *args):
    if not policy.allowed(context, call):
        return [policy.denied(context, call, 'resource classes').item(
            name=items.echo(name))]
    return items.one(context, {'name': items.echo(name)}, fn, *args)


def _existing_custom(conn, name, verb):
    """The id of the custom class ``name``, or the fault."""
    class_id = db_classes.ids_by_name(conn, [name]).get(name)
    if class_id is None:
        raise codes.Fault(codes.RESOURCE_CLASS_NOT_FOUND_404,
                          'No such resource class %s' % name)
    if name in os_resource_classes.STANDARDS:
        raise validation.invalid('%s is a standard resource class and '
                                 'cannot be %s' % (name, verb))
    return class_id


def delete_resource_class(context, name):
    """Delete a CUSTOM_ class no inventory or allocation uses."""
    return _allowed_one(context, 'delete_resource_class', name, _delete,
                        name)


def _delete(name):
    name = validation.resource_class(name, 'name')
    if name in os_resource_classes.STANDARDS:
        raise validation.invalid('%s is a standard resource class and '
                                 'cannot be deleted' % name)
    retry.write(_remove, name)
    return {'name': name, 'status': 200}


def _remove(name):
    with db.writer() as conn:
        class_id = _existing_custom(conn, name, 'deleted')
        if db_classes.in_use(conn, class_id):
            raise codes.Fault(codes.RESOURCE_CLASS_IN_USE,
                              'Cannot delete resource class %s. Class is '
                              'in use in inventory or allocations.' % name)
        db_classes.delete(conn, class_id)


def rename_resource_class(context, name, new_name):
    """Give the CUSTOM_ class ``name`` the CUSTOM_ name ``new_name``; the
    item carries the new name. 409 ``resource_class.exists`` when that
    name is taken."""
    return _allowed_one(context, 'update_resource_class', name, _rename,
                        name, new_name)


def _rename(name, new_name):
    name = validation.resource_class(name, 'name')
    new_name = validation.custom_name(new_name, 'new_name')
    try:
        retry.write(_write_name, name, new_name)
    except db_exc.DBDuplicateEntry:
        raise _taken(new_name)
    return {'name': new_name, 'status': 200}


def _write_name(name, new_name):
    with db.writer() as conn:
        class_id = _existing_custom(conn, name, 'renamed')
        if new_name != name and db_classes.ids_by_name(conn, [new_name]):
            raise _taken(new_name)
        db_classes.rename(conn, class_id, new_name)


def _taken(new_name):
    return codes.Fault(codes.RESOURCE_CLASS_EXISTS,
                       'Resource class already exists: %s' % new_name)


def create_resource_class(context, name):
    """Create a CUSTOM_ class; creating an existing one is a no-op (200)."""
    return _allowed_one(context, 'create_resource_class', name,
                        _create_resource_class, name)


def _create_resource_class(name):
    name = validation.custom_name(name)
    created = retry.write(_insert_resource_class, name)
    return {'name': name, 'created': created, 'status': 200}


def _insert_resource_class(name):
    with db.writer() as conn:
        return db_classes.create(conn, name)


def list_resource_classes(context):
    if not policy.allowed(context, 'list_resource_classes'):
        return []
    with db.reader() as conn:
        return [{'name': name, 'status': 200}
                for name in db_classes.names(conn)]
