"""The command lines load only what their command uses (issue 39): help
loads neither the service layer nor the libraries beneath it, and
``db version`` reads the revision without oslo.messaging or osprofiler.
Each runs in a fresh interpreter, whose modules are then listed."""

import argparse
import json
import subprocess
import sys

from allocworker.cmd import commands as cli
from allocworker.cmd import manage

# Run as the console scripts run main(); the last line of output lists
# the modules of LISTED loaded by then.
SCRIPT = '''
import json
import sys

listed = json.loads(sys.argv[2])
sys.argv = ['allocworker-command'] + json.loads(sys.argv[1])

from allocworker.cmd import %s as command

try:
    command.main()
except SystemExit:
    pass
print(json.dumps(sorted(
    name for name in sys.modules
    if any(name == top or name.startswith(top + '.') for top in listed))))
'''

LIBRARIES = ['alembic', 'eventlet', 'kombu', 'oslo_messaging', 'osprofiler',
             'sqlalchemy']
SERVICE_LAYER = ['allocworker.allocations', 'allocworker.books',
                 'allocworker.db', 'allocworker.events',
                 'allocworker.groups', 'allocworker.providers',
                 'allocworker.scheduling']


def _loaded(program, argv, listed):
    """(stdout before the list, the modules of ``listed`` loaded) of
    allocworker-``program`` run with ``argv``."""
    result = subprocess.run(
        [sys.executable, '-c', SCRIPT % program, json.dumps(argv),
         json.dumps(listed)],
        capture_output=True, text=True, timeout=120, check=True)
    output, _, modules = result.stdout.rstrip('\n').rpartition('\n')
    return output, json.loads(modules)


def test_manage_help_loads_no_command():
    output, loaded = _loaded('manage', ['--help'],
                             LIBRARIES + SERVICE_LAYER)
    assert 'run "allocworker-manage CATEGORY -h"' in output
    assert loaded == []


def test_a_category_help_loads_no_command():
    output, loaded = _loaded('manage', ['provider', '--help'],
                             LIBRARIES + SERVICE_LAYER)
    assert 'create' in output
    assert loaded == []


def test_status_help_loads_no_check():
    output, loaded = _loaded('status', ['--help'],
                             LIBRARIES + SERVICE_LAYER)
    assert 'upgrade' in output
    assert loaded == []


def test_db_version_loads_only_the_database(tmp_path):
    config = tmp_path / 'allocworker.conf'
    config.write_text('[DEFAULT]\nstate_path = %s\nlog_file = %s/aw.log\n'
                      '[database]\nconnection = sqlite:///%s/aw.sqlite\n'
                      % (tmp_path, tmp_path, tmp_path))
    output, loaded = _loaded(
        'manage', ['--config-file', str(config), 'db', 'version'],
        LIBRARIES + SERVICE_LAYER)
    assert output == 'none (never synced)'
    assert 'alembic' in loaded and 'allocworker.db.migration' in loaded
    assert [name for name in loaded if not name.startswith(
        ('allocworker.db', 'alembic', 'sqlalchemy'))] == []


def test_every_command_names_a_function(monkeypatch):
    named = []
    add = cli.add

    def recording(subparsers, name, handler, *args):
        named.append(handler)
        return add(subparsers, name, handler, *args)

    monkeypatch.setattr(cli, 'add', recording)
    manage.add_command_parsers(argparse.ArgumentParser().add_subparsers())
    assert len(named) == len(set(named)) > 20
    for handler in named:
        assert callable(cli.load(handler)), handler
