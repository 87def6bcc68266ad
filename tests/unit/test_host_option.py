"""[DEFAULT] host names a worker host; 0.1's [worker] host still works."""

from oslo_config import cfg

from allocworker.conf import worker


def _conf(tmp_path, text):
    path = tmp_path / 'aw.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    worker.register_opts(conf)
    conf(['--config-file', str(path)])
    return conf


def test_default_host_names_the_worker(tmp_path):
    assert _conf(tmp_path, '[DEFAULT]\nhost = ctl-2\n').host == 'ctl-2'


def test_worker_host_is_a_deprecated_alias(tmp_path):
    assert _conf(tmp_path, '[worker]\nhost = ctl-1\n').host == 'ctl-1'


def test_default_host_wins_over_the_alias(tmp_path):
    conf = _conf(tmp_path, '[DEFAULT]\nhost = new\n[worker]\nhost = old\n')
    assert conf.host == 'new'
