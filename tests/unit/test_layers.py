"""The house rules of the code, checked: layers fall one way (entry points
on top, codes and configuration at the bottom), no import cycles, and
nothing above db/ builds SQL."""

import ast
import os

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', 'allocworker')

# Lower numbers are lower layers; a module may import its own layer or
# lower ones only.
LAYERS = [
    ('allocworker.cmd', 7), ('allocworker.api', 6),
    ('allocworker.manager', 5), ('allocworker.rpcapi', 5),
    ('allocworker.service', 5), ('allocworker.calls', 5),
    # Pure rules inside the service-layer packages sit at the bottom.
    ('allocworker.capacity', 1),
    ('allocworker.groups.rules', 1),
    ('allocworker.partitions', 1),
    ('allocworker.quota.rule', 1),
    ('allocworker.providers', 4), ('allocworker.allocations', 4),
    ('allocworker.events', 4), ('allocworker.groups', 4),
    ('allocworker.scheduling', 4), ('allocworker.quota', 4),
    ('allocworker.from_placement', 4),
    ('allocworker.books', 4), ('allocworker.upkeep', 4),
    ('allocworker.retry', 3), ('allocworker.policy', 3),
    ('allocworker.bindings', 3),
    ('allocworker.items', 3),
    ('allocworker.notifications', 3), ('allocworker.audit', 3),
    ('allocworker.db', 2), ('allocworker.rpc', 2),
    ('allocworker.rpc_server', 2),
    # The hooks and families sit at the bottom so that any layer may
    # record; the endpoint and health checks read the database.
    ('allocworker.metrics.endpoint', 3), ('allocworker.metrics.health', 3),
    ('allocworker.metrics', 1),
    ('allocworker.codes', 1), ('allocworker.conf', 1),
    ('allocworker.validation', 1), ('allocworker.policies', 1),
    ('allocworker', 0),
]


def layer(module):
    for prefix, level in LAYERS:
        if module == prefix or module.startswith(prefix + '.'):
            return level
    raise AssertionError('%s has no layer; add it to LAYERS' % module)


def modules():
    for folder, _dirs, files in os.walk(ROOT):
        for name in files:
            if name.endswith('.py'):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, os.path.dirname(ROOT))
                module = rel[:-3].replace(os.sep, '.')
                if module.endswith('.__init__'):
                    module = module[:-len('.__init__')]
                yield module, path


def imports(path):
    tree = ast.parse(open(path).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.startswith('allocworker'):
            for alias in node.names:
                yield '%s.%s' % (node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith('allocworker'):
                    yield alias.name


def graph():
    known = dict(modules())
    edges = {}
    for module, path in known.items():
        targets = set()
        for name in imports(path):
            # "from allocworker.db import api" names a module; "from
            # allocworker.conf import CONF" names an attribute.
            while name not in known:
                name = name.rsplit('.', 1)[0]
            if name != module:
                targets.add(name)
        edges[module] = targets
    return edges


def test_layers_fall_one_way():
    upward = ['%s -> %s' % (m, t) for m, targets in graph().items()
              for t in targets if layer(t) > layer(m)]
    assert upward == []


def test_no_import_cycles():
    edges = graph()
    state = {}

    def visit(node, path):
        state[node] = 'open'
        for target in edges.get(node, ()):
            if state.get(target) == 'open':
                raise AssertionError('cycle: %s' % ' -> '.join(
                    path[path.index(target):] + [target]))
            if target not in state:
                visit(target, path + [target])
        state[node] = 'done'

    for module in edges:
        if module not in state:
            visit(module, [module])


def test_only_db_builds_sql():
    offenders = [m for m, path in modules()
                 if not m.startswith('allocworker.db')
                 and 'sqlalchemy' in open(path).read()]
    assert offenders == []
