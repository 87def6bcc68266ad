"""What a worker keeps of groups between transactions: each group's
members with the roots they hold, under the group's members token, and
roots' labels at the topology's levels, under the topology's epoch.

Both are read with the groups' lock (one statement: the group row as
last committed, the epoch beside it). Every write that changes what a
group's members hold, or brings it new ones, replaces the group's token
under its lock, in the write's transaction, and appends the change to
the group's log of its last changes, each with the token it left
(``judgement.enroll``). A worker whose members are kept under an older
token of the log brings them up to date from it; another worker's
writes then cost it no read. Any other change to the members clears the
token (``membership``, an import pass). So members kept under the token
a transaction reads are those a read would find. A token is random,
never counted on: one written by a transaction that rolled back is seen
by no one, and what this worker kept under it is never used.

The epoch moves with every change to a root's domain (a level's
domains, a provider's aggregates, a provider deleted, an import pass).
Such changes never waited for a group's lock: labels kept under the
epoch a transaction reads are those it could have read from the same
state. Labels at level ``partition`` (a root's own partition) are never
kept.
"""

import collections
import json
import threading

from allocworker.conf import CONF
from allocworker.db.grouping import epoch as db_epoch
from allocworker.db.grouping import groups as db_groups
from allocworker.groups import judge as group_judge

# The groups whose members a worker keeps, the most recently used.
MOST_GROUPS = 4096
# The changes a group's log holds, the last ones: enough for every other
# worker of a deployment to write between two writes of one.
LOG_STEPS = 16


class _Members(object):
    """{group id: (token, {member uuid: Placed})}, least recently used
    dropped first."""

    def __init__(self, size):
        self._size = size
        self._kept = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, group):
        """A copy of the members of ``group`` (a locked Group) as its
        token says, from those kept under it or under an older token of
        its log; None when there are none."""
        token = group.members_token
        with self._lock:
            found = self._kept.get(group.id)
        if token is None or found is None:
            return None
        if found[0] != token:
            members = _caught_up(found, group)
            if members is None:
                return None
            self.put(group.id, token, members)
            return members
        with self._lock:
            self._kept.move_to_end(group.id)
        return dict(found[1])

    def put(self, group_id, token, members):
        with self._lock:
            self._kept[group_id] = (token, dict(members))
            self._kept.move_to_end(group_id)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)


MEMBERS = _Members(MOST_GROUPS)


def _log(group):
    """The group's log, [[token, {member uuid: [type, [root id]]}]],
    oldest first (the oldest's change dropped: only its token is of
    use), when its last token is the group's."""
    if not group.members_log:
        return None
    steps = json.loads(group.members_log)
    return steps if steps and steps[-1][0] == group.members_token else None


def _caught_up(found, group):
    """The members ``found`` (token, members) with the changes of the
    group's log after that token, or None when it is not in the log."""
    steps = _log(group)
    tokens = [step[0] for step in steps or ()]
    if found[0] not in tokens:
        return None
    members = dict(found[1])
    for _token, changed in steps[tokens.index(found[0]) + 1:]:
        for uuid, (kind, roots) in changed.items():
            members[uuid] = db_groups.Placed(kind, set(roots))
    return members


def mark(group, movers):
    """(token, log) of ``group`` (its row as locked) once members
    ``movers`` ({uuid: Placed}) are written."""
    token = db_epoch.token()
    if group.members_token is None:
        steps = []
    else:
        steps = _log(group) or [[group.members_token, None]]
    steps = steps + [[token, {uuid: [p.consumer_type, sorted(p.roots)]
                              for uuid, p in sorted(movers.items())}]]
    steps = steps[-LOG_STEPS:]
    steps[0] = [steps[0][0], None]
    return token, json.dumps(steps, separators=(',', ':'))


class _Labels(object):
    """Roots' labels read under one epoch, shared by the transactions
    that read it (``Domains.keep_under``)."""

    def __init__(self, epoch):
        self.epoch = epoch
        self.labels = {}
        self.read = {}
        self.every = {}
        # Levels whose every root's label is in ``labels``, and those
        # with too many roots to read at once.
        self.whole = set()
        self.too_many = set()
        self._by_label = {}

    def roots_by_label(self, level):
        """{label: frozenset(root id)} of a level read whole."""
        found = self._by_label.get(level)
        if found is None:
            roots = collections.defaultdict(set)
            for root, label in list(self.labels[level].items()):
                roots[label].add(root)
            found = self._by_label[level] = {
                label: frozenset(ids) for label, ids in roots.items()}
        return found


_labels = _Labels(None)
_labels_lock = threading.Lock()


def labels_under(epoch):
    """The labels kept under ``epoch``: those kept so far when it is the
    epoch last seen, none when it moved (its own store from then on)."""
    global _labels
    with _labels_lock:
        if _labels.epoch != epoch:
            _labels = _Labels(epoch)
        return _labels


def members_of(conn, groups, epoch, levels):
    """{group id: {member uuid: Placed}} of the locked ``groups`` ({id:
    Group}): kept where the group's token is the one kept, read (and
    kept) otherwise. The transaction's Domains keeps labels under
    ``epoch`` and learns those of every member root at ``levels``.
    With ``[scheduling] keep_group_state`` off, all are read."""
    domains = group_judge.Domains.of(conn)
    keeping = CONF.scheduling.keep_group_state
    if epoch is not None and keeping:
        domains.keep_under(labels_under(epoch))
    found = {}
    for group_id, group in groups.items():
        members = MEMBERS.get(group) if keeping else None
        if members is not None:
            found[group_id] = members
    missing = set(groups) - set(found)
    if found:
        domains.prefetch(levels, {r for members in found.values()
                                  for placed in members.values()
                                  for r in placed.roots})
    if missing:
        read, labels, every = db_groups.member_roots_labelled(
            conn, missing, levels)
        domains.know(labels, {r for members in read.values()
                              for placed in members.values()
                              for r in placed.roots}, every)
        for group_id in missing:
            members = read.get(group_id, {})
            if groups[group_id].members_token is not None:
                MEMBERS.put(group_id, groups[group_id].members_token,
                            members)
            found[group_id] = dict(members)
    return found
