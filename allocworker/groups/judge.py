"""The one judge of group rules on books: a group's rules, its members'
placements before and after a write, and the domains of the roots
involved, read from the database as a judgement needs them.

Every caller judges through ``Judge``: the allocation transaction
(``judgement.Judgement``), a claim weighing its candidates
(``scheduling/claim_groups``), membership and rule changes, ``get_groups``
and the audit of the books.
"""

import collections

from allocworker import codes
from allocworker.db import topology as db_topology
from allocworker.groups import rules as group_rules

# A rule's verdict on one mover: the rule's index and rule, the breach.
Verdict = collections.namedtuple('Verdict', ['index', 'rule', 'breach'])


class _EveryRoot(object):
    """The labels of level ``root``: each root is its own domain."""

    def __contains__(self, root):
        return True

    def __getitem__(self, root):
        return root


EVERY_ROOT = _EveryRoot()


class Domains(object):
    """Domain labels and eligible domains, read once per transaction (or
    snapshot) and kept for its later judgements."""

    def __init__(self, conn):
        self.conn = conn
        self._labels = collections.defaultdict(dict)
        self._read = collections.defaultdict(set)
        self._eligible = {}

    def labels(self, level, root_ids):
        """{root id: label} at ``level``, covering ``root_ids``."""
        if level == group_rules.ROOT:
            return EVERY_ROOT
        missing = set(root_ids) - self._read[level]
        if missing:
            found = db_topology.labels_of_roots(self.conn, [level], missing)
            self._labels[level].update(found[level])
            self._read[level].update(missing)
        return self._labels[level]

    def eligible(self, level, class_ids, held_roots):
        """(how many domains of ``level`` offer every class of
        ``class_ids``, those labels among them that matter: all of them,
        or at level root the ``held_roots`` that do)."""
        key = (level, frozenset(class_ids))
        if level != group_rules.ROOT:
            if key not in self._eligible:
                labels = db_topology.eligible_labels(self.conn, level,
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

    def shown_label(self, level, label):
        """A label as callers see it (a root's uuid at level root)."""
        if level != group_rules.ROOT:
            return label
        return db_topology.root_uuids(self.conn, [label]).get(label, label)


class Judge(object):
    """One group's rules judged against a write: ``movers`` {uuid:
    (consumer type, {root id}, {class id})} placed as given (an empty
    set of roots: its allocations removed)."""

    def __init__(self, group, rules, members, domains):
        self.group, self.rules = group, rules
        self.members, self.domains = members, domains

    def verdicts(self, movers):
        """[Verdict] of every rule each mover breaks."""
        before = {m: p for m, p in self.members.items() if p.roots}
        after = dict(before)
        for uuid, (consumer_type, roots, _classes) in movers.items():
            if roots:
                after[uuid] = group_rules.Member(consumer_type, set(roots))
            else:
                after.pop(uuid, None)
        roots = {r for p in after.values() for r in p.roots}
        found = []
        for index, rule in enumerate(self.rules):
            labels = self.domains.labels(rule.scope, roots)
            eligible = self._eligible_for(rule, movers, after, labels)
            for breach in group_rules.breaches(rule, before, after,
                                               set(movers), labels,
                                               eligible):
                found.append(Verdict(index, rule, breach))
        return found

    def _eligible_for(self, rule, movers, after, labels):
        if rule.policy != group_rules.SPREAD:
            return None
        held = {r for p in after.values() for r in p.roots}

        def eligible(mover):
            return self.domains.eligible(rule.scope, movers[mover][2], held)
        return eligible

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
