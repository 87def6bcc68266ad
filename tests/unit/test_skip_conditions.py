"""doc/testing.md's "When tests skip" names every test file that can
skip, and no other: a skip added without saying when, or a row left
behind when a skip goes, fails here."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SKIPS = re.compile(r'pytest\.skip\(|mark\.skipif\(|importorskip\(')


def _files_that_skip():
    found = set()
    for folder in ('tests/functional', 'tests/faults'):
        for name in os.listdir(os.path.join(ROOT, folder)):
            if name.endswith('.py'):
                with open(os.path.join(ROOT, folder, name)) as f:
                    if SKIPS.search(f.read()):
                        found.add('%s/%s' % (folder, name))
    return found


def _files_in_the_table():
    with open(os.path.join(ROOT, 'doc', 'testing.md')) as f:
        text = f.read()
    section = text.split('## When tests skip', 1)[1].split('\n## ', 1)[0]
    return set(re.findall(r'`(tests/[\w/]+\.py)`', section))


def test_every_file_that_skips_says_when_in_the_docs():
    assert _files_that_skip() == _files_in_the_table()
