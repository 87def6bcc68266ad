"""The WSGI entry for uWSGI, gunicorn or mod_wsgi:
``allocworker.cmd.wsgi:application``.

Configuration files come from ``ALLOCWORKER_CONFIG_FILES`` (comma
separated) or oslo.config's default places (/etc/allocworker/...).
"""

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
    db.configure(CONF)
    # WSGI servers that load the application once before forking (uWSGI's
    # default) serve every process's metrics from this endpoint.
    metrics_endpoint.start('api', health.api_application)
    return app.build(CONF)


application = init() if os.environ.get('ALLOCWORKER_WSGI_AUTOLOAD',
                                       '1') == '1' else None
