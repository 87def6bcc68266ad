"""Checks on caller input. Each raises ``Fault(INVALID_REQUEST, detail)``
with a detail that names the offending field; each returns the value in its
canonical form. Pure functions: no database, no configuration."""

import math
import re
import uuid as uuidlib

from allocworker import codes

MAX_INT = 2147483647
MAX_STRING = 255
CUSTOM_CLASS = re.compile(r'^CUSTOM_[A-Z0-9_]+$')
ANY_CLASS = re.compile(r'^[A-Z0-9_]+$')
CONSUMER_TYPE = re.compile(r'^[A-Z0-9_]+$')


def invalid(detail):
    return codes.Fault(codes.INVALID_REQUEST, detail)


def _show(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + '...'


def uuid(value, field):
    if not isinstance(value, str):
        raise invalid('%s must be a UUID string, not %s'
                      % (field, _show(value)))
    try:
        return str(uuidlib.UUID(value))
    except ValueError:
        raise invalid('%s is not a valid UUID: %s' % (field, _show(value)))


def optional_uuid(value, field):
    return None if value is None else uuid(value, field)


def uuid_list(value, field, max_items):
    if not isinstance(value, list):
        raise invalid('%s must be a list of UUIDs' % field)
    if len(value) > max_items:
        raise invalid('%s has %d entries; at most %d are allowed'
                      % (field, len(value), max_items))
    return value


def integer(value, field, minimum=None, maximum=MAX_INT):
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid('%s must be an integer, not %s' % (field, _show(value)))
    if minimum is not None and value < minimum:
        raise invalid('%s must be at least %d, not %d'
                      % (field, minimum, value))
    if maximum is not None and value > maximum:
        raise invalid('%s must be at most %d, not %d'
                      % (field, maximum, value))
    return value


def optional_integer(value, field, **bounds):
    return None if value is None else integer(value, field, **bounds)


def positive_number(value, field):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid('%s must be a number, not %s' % (field, _show(value)))
    if not math.isfinite(value) or value <= 0 or value > 3.4e38:
        raise invalid('%s must be a finite number above 0, not %s'
                      % (field, _show(value)))
    return float(value)


def string(value, field, min_length=1, max_length=MAX_STRING):
    if not isinstance(value, str):
        raise invalid('%s must be a string, not %s' % (field, _show(value)))
    if not min_length <= len(value) <= max_length:
        raise invalid('%s must be %d to %d characters long'
                      % (field, min_length, max_length))
    return value


def boolean(value, field):
    if not isinstance(value, bool):
        raise invalid('%s must be true or false, not %s'
                      % (field, _show(value)))
    return value


def mapping(value, field):
    if not isinstance(value, dict):
        raise invalid('%s must be an object, not %s' % (field, _show(value)))
    return value


def only_keys(value, field, allowed):
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise invalid('%s has unknown field(s): %s'
                      % (field, ', '.join(unknown)))


def required(value, field, key):
    if key not in value:
        raise invalid('%s is missing the required field %s' % (field, key))
    return value[key]


def _name(value, field, pattern, what):
    if not isinstance(value, str) or not pattern.match(value) or \
            len(value) > MAX_STRING:
        raise invalid('%s is not a valid %s: %s' % (field, what,
                                                    _show(value)))
    return value


def resource_class(value, field):
    return _name(value, field, ANY_CLASS, 'resource class name')


def trait_name(value, field):
    return _name(value, field, ANY_CLASS, 'trait name')


def custom_name(value, field='name'):
    """A CUSTOM_ resource class or trait, the only kind operators make."""
    if not isinstance(value, str) or not CUSTOM_CLASS.match(value) or \
            len(value) > MAX_STRING:
        raise invalid('%s must match ^CUSTOM_[A-Z0-9_]+$ (at most %d '
                      'characters), not %s' % (field, MAX_STRING,
                                               _show(value)))
    return value


def consumer_type(value, field):
    if not isinstance(value, str) or not CONSUMER_TYPE.match(value) or \
            len(value) > MAX_STRING:
        raise invalid('%s must be upper-case letters, digits and _, not %s'
                      % (field, _show(value)))
    return value


def batch(value, field, max_items):
    """A call's list of items; a bad list fails the whole request."""
    if not isinstance(value, list):
        raise invalid('%s must be a list, not %s' % (field, _show(value)))
    if len(value) > max_items:
        raise invalid('%s has %d items; at most %d are allowed per call '
                      '([worker] max_batch_items)'
                      % (field, len(value), max_items))
    return value
