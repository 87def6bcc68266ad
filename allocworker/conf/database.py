"""[database]: oslo.db owns the options; we only set the embedded default."""

from oslo_db import options as db_options

# $state_path is substituted by oslo.config when the value is read.
DEFAULT_CONNECTION = 'sqlite:///$state_path/allocworker.sqlite'


def register_opts(conf):
    db_options.set_defaults(conf, connection=DEFAULT_CONNECTION)


def list_opts():
    # oslo.db publishes its own options under the oslo.db namespace.
    return {}
