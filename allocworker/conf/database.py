"""[database]: oslo.db owns the options; we only set the embedded default."""

from oslo_config import cfg
from oslo_db import options as db_options

# $state_path is substituted by oslo.config when the value is read.
DEFAULT_CONNECTION = 'sqlite:///$state_path/allocworker.sqlite'


def set_defaults():
    # On the option objects themselves, so the generated sample shows it.
    cfg.set_defaults(db_options.database_opts,
                     connection=DEFAULT_CONNECTION)


def register_opts(conf):
    set_defaults()
    conf.register_opts(db_options.database_opts, group='database')


def list_opts():
    # oslo.db publishes its own options under the oslo.db namespace.
    return {}
