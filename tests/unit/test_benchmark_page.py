"""benchmarks/README.md's results are the committed result files,
rendered (``benchmarks/render.py``): a file changed without rendering the
page again, or a figure edited by hand, fails here."""

from benchmarks import render


def test_the_page_shows_exactly_the_committed_result_files():
    with open(render.PAGE) as f:
        assert f.read() == render.page(), (
            'benchmarks/README.md is stale: run '
            '.venv/bin/python -m benchmarks.render')


def test_the_page_has_its_markers_once():
    with open(render.PAGE) as f:
        text = f.read()
    assert text.count(render.BEGIN) == 1 and text.count(render.END) == 1
