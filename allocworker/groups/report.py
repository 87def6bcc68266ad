"""Groups as the books hold them: ``get_groups`` (members, their roots,
each rule's counts per domain, its skew and whether it holds, in one
snapshot) and the audit of every rule the books break."""

import collections

from allocworker import codes
from allocworker.conf import CONF
from allocworker.db import api as db
from allocworker.db.grouping import groups as db_groups
from allocworker.groups import judge as group_judge
from allocworker.groups import judgement
from allocworker.groups import membership
from allocworker.groups import rules as group_rules
from allocworker import items
from allocworker import policy
from allocworker import validation


def get_groups(context, uuids=None, project_id=None):
    """Groups with members, ``roots``, ``rules`` and ``domains``; 404
    items for unknown uuids."""
    if uuids is not None:
        validation.uuid_list(uuids, 'uuids', CONF.worker.max_batch_items)
    wanted = None if uuids is None else items.each_uuid(uuids, 'uuids')
    with db.snapshot() as conn:
        found = db_groups.describe(
            conn, None if wanted is None else items.valid(wanted),
            project_id=project_id)
        domains = group_judge.Domains(conn)
        described = {g.uuid: _described(domains, g, members)
                     if policy.allowed(context, 'get_groups', g.project_id)
                     else policy.denied(context, 'get_groups', 'group %s'
                                        % g.uuid).item(uuid=g.uuid)
                     for g, members in found}
    if wanted is None:
        return [i for i in described.values() if i['status'] == 200]
    return [w.item(uuid=items.echo(raw)) if isinstance(w, codes.Fault)
            else described.get(w) or membership._not_found(w).item(uuid=w)
            for raw, w in zip(uuids, wanted)]


def _described(domains, group, members):
    roots = collections.defaultdict(list)
    for member, held in sorted(members.items()):
        for root_uuid in sorted(held.roots.values()):
            roots[root_uuid].append(member)
    rules = judgement.rules_of(group)
    return membership.group_item(
        group, members, rules, roots=dict(roots),
        domains=[rule_state(domains, index, rule, members)
                 for index, rule in enumerate(rules)])


def rule_state(domains, index, rule, members):
    """{"rule", "counts", "skew"?, "satisfied"} of one rule over
    ``members`` ({uuid: db_groups.Held}); also "unplaced": members
    counted by the rule on roots without a domain at its scope."""
    held = {m: h for m, h in group_rules.counted(rule, members).items()
            if h.roots}
    root_ids = {r for h in held.values() for r in h.roots}
    labels = domains.labels(rule.scope, root_ids)
    placed = {m: group_rules.Member(h.consumer_type, set(h.roots))
              for m, h in held.items()}
    per_domain = group_rules.counts(placed, labels)
    unplaced = sorted(m for m, p in placed.items()
                      if group_rules.nowhere(p, labels))
    state = {'rule': index}
    reach = None
    if rule.policy == group_rules.SPREAD:
        reach = _reach(domains, rule, held, root_ids)
        shown = collections.Counter({d: 0 for d in reach[1]
                                     if rule.scope != group_rules.ROOT})
        shown.update(per_domain)
        state['skew'] = group_rules.skew(rule, per_domain, reach)
    else:
        shown = per_domain
    uuids = {root: uuid for h in held.values()
             for root, uuid in h.roots.items()} \
        if rule.scope == group_rules.ROOT else {}
    state['counts'] = {uuids.get(d, d): n
                       for d, n in sorted(shown.items(), key=str)}
    state['satisfied'] = not unplaced and group_rules.satisfied(
        rule, per_domain, reach)
    if unplaced:
        state['unplaced'] = unplaced
    return state


def _reach(domains, rule, held, root_ids):
    """A spread rule's eligible domains over what its members hold: a
    domain is eligible when it offers every class of some member."""
    count, labels = 0, set()
    for class_ids in {frozenset(h.class_ids) for h in held.values()}:
        found, some = domains.eligible(rule.scope, class_ids, root_ids)
        count = max(count, found) if rule.scope == group_rules.ROOT \
            else len(labels | set(some))
        labels |= set(some)
    return count, labels


def broken_rules():
    """Every hard rule that members' current placement breaks."""
    broken = []
    with db.snapshot() as conn:
        domains = group_judge.Domains(conn)
        for group, members in db_groups.describe(conn):
            for index, rule in enumerate(judgement.rules_of(group)):
                if rule.enforcement != group_rules.HARD:
                    continue
                state = rule_state(domains, index, rule, members)
                if not state['satisfied']:
                    broken.append(dict(state, group_uuid=group.uuid,
                                       rule=group_rules.shown(rule),
                                       index=index))
    return broken
