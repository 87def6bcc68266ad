"""Which candidate a claim tries first, as pure logic.

``spread`` puts the candidate with the most free capacity of the
requested classes first, ``pack`` the one with the least. Classes are
counted in their own units, so each class's free amount is scaled by the
largest among the candidates before the classes are added up (as Nova's
weighers normalize). Scores are compared to within ``SCORE_STEP`` (1% of
the largest candidate's free capacity of a class): equal ones are ordered
by a hash of the consumer and the root, so each consumer sees its own
order, and concurrent claims facing (nearly) equal hosts spread over them
instead of queueing on one.

The rules of a consumer's groups sort the candidates into tiers before
this order applies (``claim_groups``).
"""

import collections
import hashlib


SPREAD = 'spread'
PACK = 'pack'
STRATEGIES = (SPREAD, PACK)
SCORE_STEP = 0.01


def free_capacity(candidate):
    """{class: free units} the candidate weighs with, before it is
    placed: for a class its tree holds, the room left in the whole tree
    (``tree_free``, when the candidate carries it: a host half used on
    one NUMA node is less free than an empty host); otherwise on the
    providers it takes the class from (a sharing provider's room)."""
    free = collections.Counter()
    tree = candidate.get('tree_free', {})
    for provider, resources in candidate['allocations'].items():
        summary = candidate['providers'][provider]
        for name in resources:
            if name in tree:
                free[name] = tree[name]
            else:
                free[name] += (summary['capacity'].get(name, 0) -
                               summary['used'].get(name, 0))
    return free


def _tie_break(consumer_uuid, root_uuid):
    return hashlib.sha256(('%s %s' % (consumer_uuid, root_uuid))
                          .encode('utf-8')).hexdigest()


def _steps(candidates):
    """Each candidate's free capacity over every class it is weighed by
    (each class scaled by the largest among ``candidates``), in whole
    ``SCORE_STEP``s: candidates a step apart or less count as equal."""
    frees = [free_capacity(c) for c in candidates]
    largest = collections.Counter()
    for free in frees:
        for name, amount in free.items():
            largest[name] = max(largest[name], amount)
    return [round(sum(amount / largest[name] for name, amount in free.items()
                      if largest[name] > 0) / SCORE_STEP)
            for free in frees]


def ordered(candidates, strategy, consumer_uuid):
    """``candidates`` in the order a claim by ``strategy`` tries them."""
    sign = -1 if strategy == SPREAD else 1
    keyed = sorted(
        (sign * step, _tie_break(consumer_uuid, candidate['root_uuid']),
         index)
        for index, (candidate, step) in enumerate(
            zip(candidates, _steps(candidates))))
    return [candidates[index] for _step, _tie, index in keyed]


def roomiest(candidates):
    """The candidates ``spread`` counts as roomy as the roomiest one."""
    steps = _steps(candidates)
    top = max(steps, default=None)
    return [c for c, step in zip(candidates, steps) if step == top]
