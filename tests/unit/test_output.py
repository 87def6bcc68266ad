"""allocworker-manage's tables are drawn as cliff draws OpenStack's: a
bordered prettytable, numbers to the right, text to the left."""

import io

from allocworker.cmd import output


def printed(rows, columns, fmt='table'):
    stream = io.StringIO()
    output.emit(rows, columns, fmt, stream)
    return stream.getvalue()


def test_a_table_is_bordered_with_numbers_to_the_right():
    assert printed([{'name': 'VCPU', 'used': 2, 'gone': None},
                    {'name': 'MEMORY_MB', 'used': 2048.0, 'gone': True}],
                   ['name', 'used', 'gone']).splitlines() == [
        '+-----------+------+------+',
        '| name      | used | gone |',
        '+-----------+------+------+',
        '| VCPU      |    2 | -    |',
        '| MEMORY_MB | 2048 | True |',
        '+-----------+------+------+']


def test_no_rows_and_json():
    assert printed([], ['name']) == '(none)\n'
    assert printed([{'b': 1, 'a': [2]}], ['a'], 'json') == \
        '[\n  {\n    "a": [\n      2\n    ],\n    "b": 1\n  }\n]\n'
