"""The WSGI entry for uWSGI, gunicorn or mod_wsgi:
``allocworker.cmd.wsgi:application``.

Configuration files come from ``ALLOCWORKER_CONFIG_FILES`` (comma
separated) or oslo.config's default places (/etc/allocworker/...).
"""

import gc
import os

from allocworker.api import app
from allocworker.cmd import common
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.metrics import endpoint as metrics_endpoint
from allocworker.metrics import health
from allocworker.metrics import tracing


def init():
    files = [f for f in os.environ.get('ALLOCWORKER_CONFIG_FILES',
                                       '').split(',') if f]
    common.prepare([], default_config_files=files or None)
    tracing.setup('api', CONF.host)
    db.configure(CONF, trace=tracing.enabled())
    # Every process records; the first to take [metrics] port serves
    # them all (see doc/deployment.md, "Monitoring").
    metrics_endpoint.start('api', health.api_application, shared=True)
    application = app.build(CONF)
    # As in a worker process (service._child): what lives as long as the
    # process is left out of full collections, which walked it all (half
    # the CPU of a 1,000-candidate answer of wide trees).
    gc.freeze()
    return application


application = init() if os.environ.get('ALLOCWORKER_WSGI_AUTOLOAD',
                                       '1') == '1' else None
