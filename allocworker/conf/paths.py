from oslo_config import cfg

state_path = cfg.StrOpt(
    'state_path',
    default='/var/lib/allocworker',
    help='Directory where allocworker keeps its state; the embedded SQLite '
         'database lives here unless [database] connection names another.')


def register_opts(conf):
    conf.register_opt(state_path)


def list_opts():
    return {'DEFAULT': [state_path]}
