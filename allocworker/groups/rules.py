"""Group rules at failure-domain scope (design §3, RPC 1.5), as pure
logic: what a rule is, how one is read from a caller, and the one judge
of a write against it.

A member's domains at a level are the labels of the roots it holds
allocations under (roots without a label there have no domain). A root
labelled None is set aside (at level ``partition``, a root of partition
``shared``: it serves every partition): it is no domain, and a member
is refused or warned of for it only when it holds no domain at all. The
judge is handed, per rule, ``before`` and ``after``: {member uuid:
Member} of the members holding allocations now and once the write is
applied; ``movers``: the members the write changes. Only movers are
judged, and only where the write makes the rule worse: books already
over a rule (an aggregate moved) refuse only what adds to it.
"""

import collections
import json
import re

from allocworker import partitions
from allocworker import validation

ANTI_AFFINITY = 'anti-affinity'
AFFINITY = 'affinity'
SPREAD = 'spread'
RULE_POLICIES = (ANTI_AFFINITY, AFFINITY, SPREAD)
HARD = 'hard'
SOFT = 'soft'
ENFORCEMENTS = (HARD, SOFT)
SOFT_WARNING = 'group.soft_policy'

# The 1.0 policies: one rule at scope root.
SOFT_AFFINITY = 'soft-affinity'
SOFT_ANTI_AFFINITY = 'soft-anti-affinity'
POLICIES = (AFFINITY, ANTI_AFFINITY, SOFT_AFFINITY, SOFT_ANTI_AFFINITY)
ANTI_POLICIES = (ANTI_AFFINITY, SOFT_ANTI_AFFINITY)

ROOT = 'root'
PARTITION = partitions.LEVEL
RESERVED_LEVELS = (ROOT, PARTITION)
LEVEL_NAME = re.compile(r'^[a-z][a-z0-9_-]{0,63}$')

Rule = collections.namedtuple('Rule', [
    'policy', 'scope', 'max_per_domain', 'max_domains', 'max_skew',
    'min_domains', 'enforcement', 'consumer_types'])
Member = collections.namedtuple('Member', ['consumer_type', 'roots'])
# What a rule refuses (hard) or warns of (soft): the mover, and the
# domain it went too far in (None: a root without a domain at the scope).
Breach = collections.namedtuple('Breach', ['mover', 'domain'])

_LIMIT = {ANTI_AFFINITY: 'max_per_domain', AFFINITY: 'max_domains',
          SPREAD: 'max_skew'}
_FIELDS = frozenset(['policy', 'scope', 'max_per_domain', 'max_domains',
                     'max_skew', 'min_domains', 'enforcement',
                     'consumer_types'])


# -- reading and showing rules ----------------------------------------------

def level_name(name, where):
    """A topology level's name, checked (built-in ones allowed)."""
    if not isinstance(name, str) or not LEVEL_NAME.match(name):
        raise validation.invalid('%s must match %s, not %r'
                                 % (where, LEVEL_NAME.pattern, name))
    return name


def parse(raw, where='rules'):
    """[Rule] from a caller's list of rule dicts; invalid_request naming
    the field otherwise."""
    if not isinstance(raw, list) or not raw:
        raise validation.invalid('%s must be a non-empty list of rules'
                                 % where)
    if len(raw) > 16:
        raise validation.invalid('%s holds at most 16 rules, not %d'
                                 % (where, len(raw)))
    return [_parse_one(rule, '%s[%d]' % (where, i))
            for i, rule in enumerate(raw)]


def _parse_one(raw, where):
    if not isinstance(raw, dict):
        raise validation.invalid('%s must be an object' % where)
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise validation.invalid('%s.%s is not a field of a rule'
                                 % (where, unknown[0]))
    name = raw.get('policy')
    if name not in RULE_POLICIES:
        raise validation.invalid('%s.policy must be one of %s, not %r'
                                 % (where, ', '.join(RULE_POLICIES), name))
    for field in ('max_per_domain', 'max_domains', 'max_skew',
                  'min_domains'):
        if raw.get(field) is not None and field != _LIMIT[name] and \
                not (field == 'min_domains' and name == SPREAD):
            raise validation.invalid('%s.%s does not apply to %s'
                                     % (where, field, name))
    limit = _LIMIT[name]
    value = raw.get(limit)
    value = 1 if value is None else validation.integer(
        value, '%s.%s' % (where, limit), minimum=1)
    min_domains = raw.get('min_domains')
    if min_domains is not None:
        min_domains = validation.integer(
            min_domains, where + '.min_domains', minimum=1)
    enforcement = raw.get('enforcement', HARD)
    if enforcement not in ENFORCEMENTS:
        raise validation.invalid('%s.enforcement must be hard or soft, '
                                 'not %r' % (where, enforcement))
    return Rule(name, level_name(raw.get('scope', ROOT), where + '.scope'),
                value if name == ANTI_AFFINITY else None,
                value if name == AFFINITY else None,
                value if name == SPREAD else None, min_domains,
                enforcement, _consumer_types(raw.get('consumer_types'),
                                             where + '.consumer_types'))


def _consumer_types(raw, where):
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        raise validation.invalid('%s must be a non-empty list of consumer '
                                 'types' % where)
    return tuple(sorted({validation.consumer_type(t, where) for t in raw}))


def from_policy(policy, max_per_root):
    """The one rule a 1.0 ``policy`` (and ``max_per_root``) says."""
    soft = policy.startswith('soft-')
    name = policy[len('soft-'):] if soft else policy
    return Rule(name, ROOT, (max_per_root or 1) if name == ANTI_AFFINITY
                else None, 1 if name == AFFINITY else None, None, None,
                SOFT if soft else HARD, None)


def as_policy(rules):
    """(policy, max_per_root) of the 1.0 form that says ``rules``
    exactly, or (None, None) when it cannot."""
    if len(rules) != 1:
        return None, None
    rule, = rules
    if rule.scope != ROOT or rule.policy == SPREAD or rule.consumer_types \
            or (rule.policy == AFFINITY and rule.max_domains != 1):
        return None, None
    policy = rule.policy if rule.enforcement == HARD else \
        'soft-' + rule.policy
    return policy, rule.max_per_domain


def shown(rule):
    """A rule as the wire shows it: the fields that apply to it."""
    item = {'policy': rule.policy, 'scope': rule.scope,
            _LIMIT[rule.policy]: getattr(rule, _LIMIT[rule.policy]),
            'enforcement': rule.enforcement,
            'consumer_types': list(rule.consumer_types)
            if rule.consumer_types else None}
    if rule.policy == SPREAD:
        item['min_domains'] = rule.min_domains
    return item


def dumps(rules):
    return json.dumps([shown(r) for r in rules], sort_keys=True)


def loads(text, policy, max_per_root):
    """A stored group's rules: its ``rules`` column, else its policy."""
    if text is None:
        return [from_policy(policy, max_per_root)]
    return parse(json.loads(text))


def describe(index, rule):
    """How a detail names a rule."""
    limit = _LIMIT[rule.policy]
    return 'rule %d (%s %s at scope %s, %s %d)' % (
        index, rule.enforcement, rule.policy, rule.scope, limit,
        getattr(rule, limit))


# -- the judge ------------------------------------------------------------

def counted(rule, members):
    """The members ``rule`` counts: those of its consumer types."""
    if not rule.consumer_types:
        return members
    return {m: v for m, v in members.items()
            if v.consumer_type in rule.consumer_types}


def domains(member, labels):
    """A member's domains: the labels of its roots that have one (None:
    a root set aside)."""
    if member is None:
        return set()
    return {labels[r] for r in member.roots
            if r in labels and labels[r] is not None}


def nowhere(member, labels):
    """Whether a placed member keeps no rule at this scope: it holds a
    root without a domain there, or only roots set aside."""
    return any(r not in labels for r in member.roots) or \
        not domains(member, labels)


def counts(members, labels):
    """{domain: members holding allocations there}."""
    found = collections.Counter()
    for member in members.values():
        found.update(domains(member, labels))
    return found


def breaches(rule, before, after, movers, labels, eligible=None,
             base=None):
    """[Breach] of the ``movers`` that ``rule`` refuses (or, soft, warns
    of). ``before``/``after``: {member: Member} before and after the
    write (``after`` is read for the movers only: it may hold only
    theirs). ``labels``: {root: domain label} at the rule's scope;
    ``eligible(mover)``: a spread rule's eligible domains for that mover
    (those whose roots' trees offer every class it holds), as (how many
    there are, a set of them holding at least every one that holds
    members); ``base``: ``counts`` of ``before`` under the rule, when the
    caller keeps it (only the movers differ between before and after)."""
    if base is None:
        base = counts(counted(rule, before), labels)
    was = {m: before.get(m) if _counts(rule, before.get(m)) else None
           for m in movers}
    now = {m: after.get(m) if _counts(rule, after.get(m)) else None
           for m in movers}
    per_domain = collections.Counter(base)
    touched = set()
    for mover in movers:
        left, joined = domains(was[mover], labels), domains(now[mover],
                                                            labels)
        per_domain.subtract(left)
        per_domain.update(joined)
        touched |= left | joined
    for domain in touched:
        if per_domain[domain] <= 0:
            del per_domain[domain]
    found = []
    for mover in sorted(m for m in movers if now[m] is not None):
        new_roots = now[mover].roots - (was[mover].roots if was[mover]
                                        else set())
        if any(r not in labels for r in new_roots) or (
                new_roots and not domains(now[mover], labels)):
            found.append(Breach(mover, None))
            continue
        added = sorted(domains(now[mover], labels) -
                       domains(was[mover], labels))
        if rule.policy == SPREAD:
            domain = _over_the_skew(rule, mover, added, per_domain,
                                    eligible)
        else:
            domain = _too_far(rule, added, per_domain, base)
        if domain is not None:
            found.append(Breach(mover, domain))
    return found


def _over_the_skew(rule, mover, added, per_domain, eligible):
    """The first of the ``added`` domains where a spread rule's skew
    goes past ``max_skew``. The minimum is never below 0, so a domain
    holding ``max_skew`` or fewer keeps the rule whatever the eligible
    domains are, and those are read (a statement) only otherwise."""
    crowded = [d for d in added if per_domain[d] > rule.max_skew]
    if not crowded:
        return None
    reach = eligible(mover, per_domain) if eligible else (
        len(per_domain), set(per_domain))
    limit = floor(rule, per_domain, reach) + rule.max_skew
    return next((d for d in crowded if per_domain[d] > limit), None)


def _counts(rule, member):
    """Whether ``rule`` counts ``member`` (None: no member)."""
    return member is not None and (
        not rule.consumer_types or member.consumer_type in
        rule.consumer_types)


def _too_far(rule, added, per_domain, span_before):
    """The first of the ``added`` domains where an anti-affinity or
    affinity rule goes too far."""
    if rule.policy == ANTI_AFFINITY:
        return next((d for d in added
                     if per_domain[d] > rule.max_per_domain), None)
    if len(per_domain) <= rule.max_domains:
        return None
    return next((d for d in added if d not in span_before), None)


def floor(rule, per_domain, reach):
    """A spread rule's minimum: the fewest members over the eligible
    domains, ``reach`` = (how many, a set holding every one with
    members); 0 with fewer than ``min_domains`` of them, or when one
    holds none."""
    count, labels = reach
    if count < (rule.min_domains or 0):
        return 0
    held = [per_domain[d] for d in labels if per_domain.get(d, 0) > 0]
    if count > len(held) or not held:
        return 0
    return min(held)


def skew(rule, per_domain, reach):
    """The largest count less the minimum over the eligible domains."""
    if not per_domain:
        return 0
    return max(per_domain.values()) - floor(rule, per_domain, reach)


def satisfied(rule, per_domain, reach):
    """Whether the counts keep ``rule`` as a whole (get_groups)."""
    if rule.policy == ANTI_AFFINITY:
        return all(n <= rule.max_per_domain for n in per_domain.values())
    if rule.policy == AFFINITY:
        return len(per_domain) <= rule.max_domains
    return skew(rule, per_domain, reach) <= rule.max_skew
