"""Every configuration option of allocworker, registered in one place.

Import ``CONF`` from here; modules never register options themselves.
"""

from oslo_config import cfg

from allocworker.conf import api
from allocworker.conf import database
from allocworker.conf import events
from allocworker.conf import metrics
from allocworker.conf import paths
from allocworker.conf import profiler
from allocworker.conf import quota
from allocworker.conf import scheduling
from allocworker.conf import upgrade_levels
from allocworker.conf import worker

CONF = cfg.CONF

paths.register_opts(CONF)
database.register_opts(CONF)
worker.register_opts(CONF)
events.register_opts(CONF)
upgrade_levels.register_opts(CONF)
api.register_opts(CONF)
scheduling.register_opts(CONF)
metrics.register_opts(CONF)
profiler.register_opts(CONF)
quota.register_opts(CONF)
