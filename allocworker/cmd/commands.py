"""What every allocworker-manage command shares: the operator's context,
how a service call's items become output or a one-line error, and how a
command joins the command tree."""

import importlib

from oslo_context import context as oslo_context

from allocworker.cmd import output
from allocworker.conf import CONF


class CommandError(Exception):
    """A one-line reason to print before exiting non-zero."""


def context():
    return oslo_context.RequestContext(
        roles=['admin'], user_id='allocworker-manage',
        project_id='allocworker-manage', is_admin=True)


def items(items):
    """Items of a service call; the first failure becomes the error."""
    for item in items:
        if item['status'] >= 400:
            raise CommandError('%s (%s): %s' % (item['code'], item['status'],
                                                item['detail']))
    return items


def emit(rows, columns):
    output.emit(rows, columns, CONF.command.format)


def add(subparsers, name, handler, help_text, args=()):
    """A command of the tree; ``handler`` names its function (``load``)."""
    parser = subparsers.add_parser(name, help=help_text)
    parser.set_defaults(handler=handler)
    parser.add_argument('--format', choices=['table', 'json'],
                        default='table', help='output format')
    for flags, kwargs in args:
        parser.add_argument(*flags, **kwargs)
    return parser


def category(subparsers, name, help_text):
    parser = subparsers.add_parser(name, help=help_text)
    return parser.add_subparsers(dest='action', required=True)


def load(handler):
    """The function ``handler`` names: 'module.function' of
    allocworker.cmd.

    The tree names its commands' functions rather than importing them:
    only the command that runs loads its module, and the service layer
    beneath it."""
    module, function = handler.rsplit('.', 1)
    return getattr(importlib.import_module('allocworker.cmd.' + module),
                   function)
