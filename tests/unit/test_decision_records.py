"""doc/decisions/ stays a set of records and an index that agree: every
record has its sections and a status, the index (README.md) links every
record in force exactly once and nothing that is not there, and every
superseded record names an existing record that replaced it. A record
added without a line in the index, or a line left behind when a record
goes, fails here."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
FOLDER = os.path.join(ROOT, 'doc', 'decisions')
INDEX = 'README.md'

NAME = re.compile(r'^(\d{4})-[a-z0-9]+(?:-[a-z0-9]+)*\.md$')
# A Markdown link to a file of this folder; the link text may wrap and
# hold balanced brackets (a title naming `[section] option`).
LINK = re.compile(r'\[(?:[^\[\]]|\[[^\[\]]*\])+\]\(([^)#\s/]+\.md)\)')
SECTIONS = ('Context', 'Decision', 'Consequences')
IN_FORCE = re.compile(r'^Status: in force$', re.M)
SUPERSEDED_BY = re.compile(r'^Superseded by: (.*)$', re.M)


def _records():
    """{file name: text} of every record (every .md but the index)."""
    records = {}
    for name in sorted(os.listdir(FOLDER)):
        if name.endswith('.md') and name != INDEX:
            with open(os.path.join(FOLDER, name)) as f:
                records[name] = f.read()
    return records


def _index():
    with open(os.path.join(FOLDER, INDEX)) as f:
        text = f.read()
    in_force, _sep, superseded = text.partition('\n## Superseded')
    return text, in_force, superseded


def _is_in_force(text):
    return bool(IN_FORCE.search(text))


def test_there_are_records():
    assert _records()


def test_records_are_named_by_number_and_slug_numbers_unique():
    numbers = {}
    for name in _records():
        match = NAME.match(name)
        assert match, '%s is not named NNNN-short-slug.md' % name
        assert match.group(1) not in numbers, (
            '%s and %s share a number' % (numbers[match.group(1)], name))
        numbers[match.group(1)] = name


def test_every_record_has_its_title_sections_and_one_status():
    for name, text in _records().items():
        assert text.startswith('# %s. ' % name[:4]), (
            '%s: the title must start "# %s. "' % (name, name[:4]))
        headings = re.findall(r'^## (.+?)\s*$', text, re.M)
        assert [h for h in headings if h in SECTIONS] == list(SECTIONS), (
            '%s: needs ## Context, ## Decision, ## Consequences in that '
            'order, found %s' % (name, headings))
        in_force = _is_in_force(text)
        superseded = SUPERSEDED_BY.search(text)
        assert in_force != bool(superseded), (
            '%s: needs exactly one of "Status: in force" and a '
            '"Superseded by:" line' % name)


def test_every_superseded_record_names_an_existing_replacement():
    records = _records()
    for name, text in records.items():
        match = SUPERSEDED_BY.search(text)
        if match is None:
            continue
        targets = LINK.findall(match.group(1))
        assert targets, '%s: "Superseded by:" links no record' % name
        for target in targets:
            assert target in records, (
                '%s is superseded by %s, which does not exist'
                % (name, target))
            assert target != name, '%s supersedes itself' % name


def test_the_index_links_every_record_in_force_exactly_once():
    records = _records()
    text, in_force_part, _superseded_part = _index()
    linked = LINK.findall(in_force_part)
    for target in set(linked):
        assert target in records, (
            'the index links %s, which does not exist' % target)
    for name, record in records.items():
        if _is_in_force(record):
            assert linked.count(name) == 1, (
                '%s is in force and must be linked once in the index\'s '
                'in-force list, found %d' % (name, linked.count(name)))
        else:
            assert name not in linked, (
                '%s is superseded but listed as in force' % name)
    for target in LINK.findall(text):
        assert target in records, (
            'the index links %s, which does not exist' % target)


def test_the_index_lists_each_superseded_record_once():
    records = _records()
    _text, _in_force_part, superseded_part = _index()
    linked = LINK.findall(superseded_part)
    for name, record in records.items():
        if not _is_in_force(record):
            assert linked.count(name) == 1, (
                '%s is superseded and must be listed once under '
                '"## Superseded"' % name)
    for target in linked:
        assert target in records and not _is_in_force(records[target]), (
            'the superseded list names %s, which is not a superseded '
            'record' % target)
