"""How commands print: aligned tables for people, JSON for scripts."""

import json
import sys


def emit(rows, columns, fmt='table', stream=None):
    stream = stream or sys.stdout
    if fmt == 'json':
        json.dump(rows, stream, indent=2, sort_keys=True, default=str)
        stream.write('\n')
        return
    if not rows:
        stream.write('(none)\n')
        return
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells))
              for i, c in enumerate(columns)]
    line = '  '.join('%-*s' % (w, c) for w, c in zip(widths, columns))
    stream.write(line.rstrip() + '\n')
    stream.write('  '.join('-' * w for w in widths) + '\n')
    for r in cells:
        stream.write('  '.join('%-*s' % (w, c)
                               for w, c in zip(widths, r)).rstrip() + '\n')


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
