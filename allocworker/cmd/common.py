"""What every command does first: parse configuration, set up logging."""

from oslo_log import log as logging

from allocworker.conf import CONF

PROJECT = 'allocworker'


def prepare(argv, default_config_files=None):
    parse(argv, default_config_files)
    setup_logging()


def parse(argv, default_config_files=None):
    logging.register_options(CONF)
    CONF(argv, project=PROJECT, default_config_files=default_config_files)


def setup_logging():
    logging.setup(CONF, PROJECT)
