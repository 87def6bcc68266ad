"""How commands print: tables for people, as OpenStack's own CLIs draw
them (cliff's table formatter, on prettytable), and JSON for scripts."""

import json
import sys

# Aligned as cliff aligns a column: by the type of its first row's value.
ALIGNMENTS = {int: 'r', float: 'r'}


def emit(rows, columns, fmt='table', stream=None):
    stream = stream or sys.stdout
    if fmt == 'json':
        json.dump(rows, stream, indent=2, sort_keys=True, default=str)
        stream.write('\n')
        return
    if not rows:
        # cliff prints nothing for no rows; a person reads '(none)' better.
        stream.write('(none)\n')
        return
    stream.write(table(rows, columns) + '\n')


def table(rows, columns):
    import prettytable  # only a command that prints a table needs it

    drawn = prettytable.PrettyTable(columns)
    drawn.padding_width = 1
    for column in columns:
        value = rows[0].get(column)
        # bool is an int to isinstance, not to a reader.
        drawn.align[column] = ALIGNMENTS.get(type(value), 'l')
    for row in rows:
        drawn.add_row([_cell(row.get(c)) for c in columns])
    return drawn.get_string()


def _cell(value):
    if value is None:
        return '-'
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def bar(used, capacity, width=20):
    """A text gauge: how full a class is, with '!' when over capacity."""
    if capacity <= 0:
        return '[' + '!' * width + ']'
    filled = min(width, int(round(width * used / capacity)))
    over = '!' if used > capacity else ''
    return '[%s%s]%s' % ('#' * filled, '.' * (width - filled), over)


def count_bar(count, largest, width=40):
    """``count`` as a run of '#', one a unit, scaled down when ``largest``
    exceeds ``width``; a non-zero count shows at least one."""
    if count <= 0 or largest <= 0:
        return ''
    if largest <= width:
        return '#' * count
    return '#' * max(1, int(round(width * count / largest)))
