import os

# Tests never read a developer's /etc/allocworker by accident.
os.environ.setdefault('OSLO_CONFIG_DIRS', '')
