"""The roots a claim weighs, a window at a time, in its strategy's order,
read from what the database keeps: the room left per provider and class
(``usages.free``, indexed), so a window costs the same on a hundred hosts
or a hundred thousand.

A window is the roots of the ``[scheduling] window_size`` providers with
the most room (``spread``) or the least room that still fits (``pack``)
for each *anchoring* class of the request: a class it asks for that no
sharing provider offers. Every candidate takes each such class from a
provider of its own tree with room for it, so its root is on that
class's list. The next window continues every list where the last one
stopped; once one anchoring class's list is read to its end, every root
that could hold a candidate has been in a window, and a claim that found
nothing fitting in them can say that nothing fits. A request whose every
class a sharing provider may serve has no anchoring class: its roots
cannot be ranked this way, and it is searched over the whole cloud
(``windows`` yields ``None`` once).

``spread``'s first window starts at a random place among the providers
that share the most room, so concurrent claims on a uniform cloud start
on different hosts (``_among_the_roomiest``); later windows read each
list from the top, and a root already weighed is not weighed again.

Within a window the claim orders the candidates by the strategy's score
over every requested class (``choosing.ordered``); the window decides
only which roots are weighed, not which one wins among them.
"""

import random

from allocworker.db import rooms as db_rooms
from allocworker.scheduling import choosing


def anchoring_amounts(request, class_ids, shared):
    """{class id: the smallest amount any group asks of it} for the
    request's anchoring classes (those not in ``shared``, the class ids
    some sharing provider offers)."""
    amounts = {}
    for group in request.groups:
        for name, amount in group.resources.items():
            class_id = class_ids[name]
            amounts[class_id] = min(amount, amounts.get(class_id, amount))
    return {c: a for c, a in amounts.items() if c not in shared}


def windows(conn, amounts, strategy, size):
    """Sets of root ids, each new, a window at a time (see above); a
    single ``None`` when there is no anchoring class."""
    if not amounts:
        yield None
        return
    most_first = strategy == choosing.SPREAD
    after = dict.fromkeys(amounts)
    seen = set()
    if most_first:
        window = _among_the_roomiest(conn, amounts, size)
        seen |= window
        if window:
            yield window
    while True:
        window, read_out = set(), False
        for class_id, amount in sorted(amounts.items()):
            rows = db_rooms.roomiest(conn, class_id, amount, most_first,
                                     after[class_id], size)
            if rows:
                after[class_id] = (rows[-1].free, rows[-1].provider_id)
            window.update(row.root_id for row in rows)
            read_out = read_out or len(rows) < size
        window -= seen
        seen |= window
        if window:
            yield window
        if read_out:
            return


def _among_the_roomiest(conn, amounts, size):
    """``spread``'s first window: for each class, ``size`` providers
    from a random place among those that share the most room (on a
    uniform cloud, all of them), so that concurrent claims start on
    different hosts instead of all weighing the same first ones. The
    windows after it read each list from its top as usual."""
    ids = db_rooms.provider_id_range(conn, amounts)
    if ids is None:
        return set()
    return {row.root_id for row in db_rooms.roomiest_from(
        conn, amounts, random.randint(*ids), size)}
