"""Entry points for oslo-config-generator."""

from allocworker.conf import api
from allocworker.conf import database
from allocworker.conf import events
from allocworker.conf import metrics
from allocworker.conf import partitions
from allocworker.conf import paths
from allocworker.conf import quota
from allocworker.conf import scheduling
from allocworker.conf import upgrade_levels
from allocworker.conf import worker


def list_opts():
    groups = {}
    for module in (paths, worker, events, upgrade_levels, api,
                   scheduling, metrics, quota, partitions):
        for group, opts in module.list_opts().items():
            groups.setdefault(group, []).extend(opts)
    return list(groups.items())


def set_lib_defaults():
    """Show the embedded database default in the generated sample."""
    database.set_defaults()
