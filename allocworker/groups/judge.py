"""The one judge of group rules on books: a group's rules, its members'
placements before and after a write, and the domains of the roots
involved, read from the database as a judgement needs them.

Every caller judges through ``Judge``: the allocation transaction
(``judgement.Judgement``), a claim weighing its candidates
(``scheduling/claim_groups``), membership and rule changes, ``get_groups``
and the audit of the books.
"""

import collections
import weakref

from allocworker import codes
from allocworker.db.grouping import partition_domains as db_partition_domains
from allocworker.db.grouping import topology as db_topology
from allocworker.groups import rules as group_rules

# The most roots a claim's rules narrow its search to; past it, the
# claim walks its windows and the judge drops what the rules refuse.
FEW_ROOTS = 2000
# The most roots of a level whose labels a worker reads at once, the
# first time it needs one of them under an epoch (past it, root by
# root, as they are needed).
WHOLE_LEVEL_ROOTS = 50000

# A rule's verdict on one mover: the rule's index and rule, the breach.
Verdict = collections.namedtuple('Verdict', ['index', 'rule', 'breach'])


class _EveryRoot(object):
    """The labels of level ``root``: each root is its own domain."""

    def __contains__(self, root):
        return True

    def __getitem__(self, root):
        return root


EVERY_ROOT = _EveryRoot()


def _source(level):
    """Where the domains of ``level`` are read: the providers' own
    partitions for level partition, the level's aggregates otherwise
    (both modules answer the same questions alike)."""
    if level == group_rules.PARTITION:
        return db_partition_domains
    return db_topology


class _ByLevel(dict):
    """{level: what is read of it} of a transaction's Domains; a
    topology level's shared with the labels the worker keeps under the
    transaction's epoch (``kept``), once it keeps any. Level
    partition's are the transaction's own: a root's partition moves
    without the epoch."""

    def __init__(self, make, kept):
        super().__init__()
        self._make, self._kept = make, kept

    def __missing__(self, level):
        shared = self._kept()
        if shared is None or level == group_rules.PARTITION:
            value = self._make()
        else:
            value = shared.setdefault(level, self._make())
        self[level] = value
        return value


class Domains(object):
    """Domain labels and eligible domains, read once per transaction (or
    snapshot) and kept for its later judgements; labels also between
    transactions, under the topology's epoch (``keep_under``)."""

    # The Domains of each open transaction (``of``): a claim weighing
    # its candidates and the try that writes one read the same.
    _open = weakref.WeakKeyDictionary()

    def __init__(self, conn):
        self.conn = conn
        self._kept = None
        self._labels = _ByLevel(dict, lambda: self._kept and
                                self._kept.labels)
        self._read = _ByLevel(set, lambda: self._kept and self._kept.read)
        self._eligible = {}
        self._empty = {}
        self._admitted = {}
        self._every = {}

    @classmethod
    def of(cls, conn):
        """The Domains of ``conn``'s current transaction."""
        transaction = conn.get_transaction()
        if transaction is None:
            return cls(conn)
        found = cls._open.get(transaction)
        if found is None or found.conn is not conn:
            found = cls._open[transaction] = cls(conn)
        return found

    def keep_under(self, kept):
        """Read and keep labels with ``kept`` (``kept.labels_under``, the
        epoch this transaction read), unless it read some already."""
        if self._kept is None and not self._read and not self._every:
            self._kept = kept

    def _whole(self, level):
        """Whether every root's label at ``level`` is known (kept):
        read them all when they are few enough. A root without a label
        there then has no domain there: a root that joins an aggregate
        moves the epoch."""
        kept = self._kept
        if kept is None or level == group_rules.PARTITION:
            return False
        if level not in kept.whole and level not in kept.too_many:
            found = db_topology.labels_of_level(self.conn, level,
                                                WHOLE_LEVEL_ROOTS)
            if found is None:
                kept.too_many.add(level)
            else:
                self._labels[level].update(found)
                kept.whole.add(level)
        return level in kept.whole

    def _kept_every(self, level):
        """The worker's {level: labels} kept under the epoch, or None."""
        if self._kept is None or level == group_rules.PARTITION:
            return None
        return self._kept.every

    def prefetch(self, levels, root_ids):
        """Read the labels of ``root_ids`` at every one of ``levels`` in
        one statement; with labels kept between transactions, every
        root's at an aggregate level the first time (``_whole``)."""
        wanted = {level: set(root_ids) - self._read[level]
                  for level in levels if level != group_rules.ROOT and
                  not self._whole(level)}
        wanted = {level: ids for level, ids in wanted.items() if ids}
        if not wanted:
            return
        every = set().union(*wanted.values())
        found = db_topology.labels_of_roots(self.conn, list(wanted), every)
        for level, ids in wanted.items():
            self._labels[level].update(found[level])
            self._read[level].update(ids)

    def know(self, labels, root_ids, every=None):
        """Take ``labels`` {level: {root id: label}}, read for every root
        of ``root_ids`` (those absent have no domain there), and
        ``every`` {level: {label}} of the levels it covers, as
        ``all_labels`` reads them."""
        for level, found in labels.items():
            self._labels[level].update(found)
            self._read[level].update(root_ids)
        for level, every_label in (every or {}).items():
            self._every[level] = every_label
            kept = self._kept_every(level)
            if kept is not None:
                kept[level] = every_label

    def labels(self, level, root_ids):
        """{root id: label} at ``level``, covering ``root_ids`` (a root
        absent has no domain there; labelled None, at level partition,
        it is set aside)."""
        if level == group_rules.ROOT:
            return EVERY_ROOT
        self.prefetch([level], root_ids)
        return self._labels[level]

    def eligible(self, level, class_ids, held_roots):
        """(how many domains of ``level`` offer every class of
        ``class_ids``, those labels among them that matter: all of them,
        or at level root the ``held_roots`` that do)."""
        key = (level, frozenset(class_ids))
        if level != group_rules.ROOT:
            if key not in self._eligible:
                labels = _source(level).eligible_labels(self.conn, level,
                                                        class_ids)
                self._eligible[key] = (len(labels), labels)
            return self._eligible[key]
        if key not in self._eligible:
            self._eligible[key] = db_topology.offering_roots(
                self.conn, class_ids)
        count = self._eligible[key]
        held = db_topology.offering_roots(self.conn, class_ids,
                                          within=held_roots)
        return count, held

    def reach(self, level, class_ids, held_before, held_after):
        """``eligible`` as a spread judgement needs it: when an eligible
        domain holds no member after the write, (more than are held, no
        labels), which makes the minimum 0, read by one statement that
        stops at the first two such domains; else ``eligible``."""
        if level == group_rules.ROOT:
            return self.eligible(level, class_ids, held_after)
        key = (level, frozenset(class_ids), frozenset(held_before))
        if key not in self._empty:
            self._empty[key] = _source(level).eligible_labels(
                self.conn, level, class_ids, excluding=held_before,
                limit=2)
        if set(self._empty[key]) - set(held_after):
            return len(held_after) + 1, set()
        return self.eligible(level, class_ids, held_after)

    def admitted_labels(self, level, class_ids, within):
        """The labels of the roots of ``within`` whose trees offer every
        class of ``class_ids``."""
        key = (level, frozenset(class_ids), within)
        if key not in self._admitted:
            offering = _source(level).offering_roots(self.conn, class_ids,
                                                     within=within)
            labels = self.labels(level, offering)
            # None: a root set aside (``shared``), no domain.
            self._admitted[key] = {labels[r] for r in offering
                                   if r in labels} - {None}
        return self._admitted[key]

    def all_labels(self, level):
        """Every label of ``level``."""
        if level not in self._every:
            kept = self._kept_every(level)
            found = kept.get(level) if kept is not None else None
            if found is None:
                found = _source(level).all_labels(self.conn, [level])[level]
                if kept is not None:
                    kept[level] = found
            self._every[level] = found
        return self._every[level]

    def roots_of_labels(self, level, labels):
        """The ids of the roots in ``labels``' domains of ``level``, or
        None when they are more than a claim lists (FEW_ROOTS); from
        the level's labels when every root's is kept."""
        if not self._whole(level):
            return _source(level).roots_in(self.conn, level, labels,
                                           FEW_ROOTS)
        by_label = self._kept.roots_by_label(level)
        found = frozenset().union(*(by_label.get(label, ())
                                    for label in labels))
        return None if len(found) > FEW_ROOTS else found

    def shown_label(self, level, label):
        """A label as callers see it (a root's uuid at level root)."""
        if level != group_rules.ROOT:
            return label
        return db_topology.root_uuids(self.conn, [label]).get(label, label)


class Judge(object):
    """One group's rules judged against a write: ``movers`` {uuid:
    (consumer type, {root id}, {class id})} placed as given (an empty
    set of roots: its allocations removed)."""

    def __init__(self, group, rules, members, domains, within=None,
                 bases=None):
        """``within``: the root ids a claim's request admits, when its
        filters admit few (a spread rule's eligible domains are then
        only theirs); None: every root. ``bases``: where the members
        are counted per rule, shared by the judges of the same members
        until one forgets them."""
        self.group, self.rules = group, rules
        self.members, self.domains = members, domains
        self.within = within
        self._bases = {} if bases is None else bases
        self._placed = None

    def forget(self):
        """The members changed (``members`` is this judge's and was
        written to): count them again, on its own."""
        self._bases = {}
        self._placed = None

    def placed(self):
        """{member uuid: Placed} of the members holding allocations
        (kept until ``forget``)."""
        if self._placed is None:
            self._placed = {m: p for m, p in self.members.items()
                            if p.roots}
        return self._placed

    def per_domain(self, index):
        """The members placed now, counted per domain by rule ``index``
        (kept until ``forget``)."""
        if index not in self._bases:
            before = self.placed()
            rule = self.rules[index]
            labels = self.domains.labels(
                rule.scope, {r for p in before.values() for r in p.roots})
            self._bases[index] = group_rules.counts(
                group_rules.counted(rule, before), labels)
        return self._bases[index]

    def verdicts(self, movers):
        """[Verdict] of every rule each mover breaks."""
        before = self.placed()
        # Only the movers' placements differ between before and after,
        # and ``breaches`` reads only theirs.
        after = {}
        for uuid, (consumer_type, roots, _classes) in movers.items():
            if roots:
                after[uuid] = group_rules.Member(consumer_type, set(roots))
        new_roots = {r for p in after.values() for r in p.roots}
        found = []
        for index, rule in enumerate(self.rules):
            base = self.per_domain(index)
            # The roots of the members placed now were read by per_domain.
            labels = self.domains.labels(rule.scope, new_roots)
            eligible = None
            if rule.policy == group_rules.SPREAD:
                eligible = self._eligible(rule, movers, set(base))
            for breach in group_rules.breaches(
                    rule, before, after, set(movers), labels, eligible,
                    base):
                found.append(Verdict(index, rule, breach))
        return found

    def _eligible(self, rule, movers, held_before):
        def eligible(mover, per_domain):
            return self.reach(rule, movers[mover][2], held_before,
                              set(per_domain))
        return eligible

    def reach(self, rule, class_ids, held_before, held_after):
        """A spread rule's eligible domains for a member holding
        ``class_ids`` (``Domains.reach``), within the roots ``within``
        admits when it is set."""
        if self.within is None:
            return self.domains.reach(rule.scope, class_ids, held_before,
                                      held_after)
        labels = self.domains.admitted_labels(rule.scope, class_ids,
                                              self.within)
        return len(labels), labels

    def refusals(self, movers):
        """({mover: Fault} for hard breaks, {mover: [warning]} for soft)."""
        faults, warnings = {}, {}
        for verdict in self.verdicts(movers):
            mover = verdict.breach.mover
            if verdict.rule.enforcement == group_rules.HARD:
                faults.setdefault(mover, self.fault(verdict))
            else:
                warnings[mover] = [group_rules.SOFT_WARNING]
        return faults, warnings

    def fault(self, verdict):
        domain = verdict.breach.domain
        where = ('a root with no domain at scope %s' % verdict.rule.scope
                 if domain is None else 'domain %s'
                 % self.domains.shown_label(verdict.rule.scope, domain))
        return codes.Fault(
            codes.GROUP_POLICY_VIOLATION,
            'consumer %s would break %s of group %s in %s'
            % (verdict.breach.mover, group_rules.describe(
                verdict.index, verdict.rule), self.group.uuid, where))
