"""One slice of root providers turned into allocation candidates: the
providers the database found for each request group, combined per root
under the request-wide rules (group_policy, same_subtree, the capacity
of a provider that several groups draw on). See ``candidates.py``."""

import collections
import itertools

from allocworker import capacity
from allocworker.db.catalog import traits as db_traits
from allocworker.db.search import candidates as db_candidates
from allocworker.db.search import filters as db_filters
from allocworker.db.search import suppliers as db_suppliers
from allocworker.scheduling import search_reads

# The fewest anchors a listing's later batch reads: the candidates per
# anchor so far may undercount the trees still to come.
_FEW_ANCHORS = 16

# One way to meet one group: the providers it maps to (ids, in order),
# its (provider id, class, amount) rows, and the providers' uuids in
# order (the candidate's mapping of the group).
Option = collections.namedtuple('Option', ['providers', 'rows', 'uuids'])


# What a batch of anchors' combinations are judged with: {id: Node}, {id:
# [trait names]}, {id: {class: (Inventory, used)}} of the classes several
# groups ask, and the ids carrying the sharing trait (None: not read).
_Facts = collections.namedtuple('_Facts', ['nodes', 'traits', 'inventories',
                                           'sharing'])


class Search(object):
    """``distinct``: one candidate per distinct set of allocations (what
    a claim writes), not per way of mapping groups onto them: of
    interchangeable groups (the same ask, filters and same_subtree
    sets), a later one never takes a provider listed before the one an
    earlier one took, so eight identical isolated groups over eight
    devices make one candidate per host instead of 8! of them."""

    def __init__(self, conn, request, plans, sharing_trait, nested,
                 make_candidate, distinct=False, offered_by_sharing=None):
        self.conn = conn
        self.request = request
        self.plans = plans
        self.labels = [plan.group.label for plan in plans]
        self.sharing = sharing_trait
        # Class ids some sharing provider offers (None: any may be).
        self.offered_by_sharing = offered_by_sharing
        self.nested = nested
        self.make_candidate = make_candidate
        named = collections.Counter(
            name for plan in plans for name, _id, _n in plan.classes)
        self.trait_check = any(
            not p.group.single_provider and
            (p.group.required or p.group.any_traits) for p in plans)
        self.isolated = [request.group_policy == 'isolate' and
                         p.group.single_provider for p in plans]
        # Classes that two groups may draw from one provider: none when
        # every group is isolated from the others.
        self.shared_classes = set() if all(self.isolated) else {
            n for n, count in named.items() if count > 1}
        self.twin = [_earlier_twin(request, plans, i) if distinct else None
                     for i in range(len(plans))]
        # What the slice being searched read, and its providers' nodes.
        self.kept = search_reads.Kept()
        self.nodes = self.kept.nodes

    def slice(self, chunk, seen, want, ranged=False, kept=None):
        """Up to ``want`` new candidates (not in ``seen``, which grows)
        anchored at the root ids of ``chunk``, in root order.
        ``ranged``: ask the database for the roots between the chunk's
        first and last (cheaper than a list when few others lie between;
        rows of those others are dropped here). ``kept`` (a
        ``search_reads.Kept``) gains what was read of the trees the
        candidates allocate from (what their summaries show), not of the
        others."""
        self.kept = search_reads.Kept()
        self.nodes = self.kept.nodes
        result = self._slice(chunk, seen, want, ranged)
        if kept is not None and result:
            by_uuid = {n.uuid: n for n in self.nodes.values()}
            kept.keep(self.kept, {by_uuid[u].root_id for c in result
                                  for u in c.allocations})
        return result

    def _slice(self, chunk, seen, want, ranged):
        members = set(chunk)
        roots = (chunk[0], chunk[-1]) if ranged else members
        found = []
        # Groups that ask the same (eight numbered groups of one VGPU
        # each) read their suppliers once.
        read = {}
        for plan in self.plans:
            found.append(self._group_rows(plan, roots, members, read))
            if not found[-1]:
                return []
        anchors = sorted(set.intersection(*(set(f) for f in found)))
        result = []
        for batch in _batches(anchors, want, result, found):
            facts = self._read_batch(batch, found, want)
            for anchor in batch:
                options = [self._options(plan, rows[anchor], facts.traits,
                                         facts.nodes)
                           for plan, rows in zip(self.plans, found)]
                for combo in self._combinations(options, facts.inventories):
                    candidate = self._judge(anchor, combo, facts.nodes,
                                            seen, facts.sharing)
                    if candidate is None:
                        continue
                    result.append(candidate)
                    if want is not None and len(result) >= want:
                        return result
        return result

    def _read_batch(self, batch, found, want):
        """``_Facts`` of a batch of anchors: the providers their groups'
        rows involve, read once for every combination built on them and
        the slice's later batches (a sharing provider serves many)."""
        involved = {p for f in found for a in batch
                    for p in _providers(f[a])}
        # Only a listing (a thousand candidates, not a claim's few) tells
        # which carry the sharing trait, to skip the duplicate key where
        # it cannot match: none does when none with it offers a class.
        carrying = want is not None and self.sharing is not None and (
            self.offered_by_sharing is None or bool(self.offered_by_sharing))
        nodes = self._nodes(batch, involved, carrying)
        traits = self.kept.lookup('traits', involved, db_candidates.traits,
                                  self.conn) if self.trait_check else {}
        inventories = self.kept.lookup(
            'inventories', involved, db_candidates.inventories,
            self.conn) if self.shared_classes else {}
        sharing = None if want is None else set()
        if carrying:  # the nodes' read told (a gap is read here)
            sharing = set(self.kept.lookup('sharing', involved, self._carry))
        return _Facts(nodes, traits, inventories, sharing)

    def _carry(self, ids):
        return dict.fromkeys(
            db_traits.carrying(self.conn, self.sharing, ids), True)

    def _nodes(self, batch, involved, carrying):
        """{id: Node} of the trees of ``batch`` and of ``involved`` (with
        same_subtree, of their trees whole; when ``carrying``, which of
        them carry the sharing trait too), unless the slice read them,
        which the slice's ``nodes`` gain: what a claim weighs the trees
        and the providers used with (candidates._weighed)."""
        known, whole = self.nodes, self.kept.whole
        nodes, sharing = db_candidates.nodes_carrying(
            self.conn, batch, involved - set(known),
            self.sharing if carrying else None)
        if carrying:
            self.kept.add('sharing', nodes, dict.fromkeys(sharing, True))
        nodes.update((p, known[p]) for p in involved if p in known)
        whole.update(batch)
        if self.request.same_subtree:
            trees = {nodes[p].root_id for p in involved} - set(batch)
            done = trees & whole
            nodes.update(db_candidates.nodes(self.conn, trees - done))
            nodes.update((p, n) for p, n in known.items()
                         if n.root_id in done)
            whole |= trees
        known.update(nodes)
        return nodes

    def _group_rows(self, plan, roots, members, read):
        """{anchor: rows}: for a numbered group the set of providers that
        have everything, for the unnumbered one {class: [providers]}.
        ``read``: the suppliers read for this slice so far, by what was
        asked."""
        per_class = []
        for name, class_id, amount in plan.classes or [(None, None, None)]:
            sharing = plan.sharing_filters
            if self.offered_by_sharing is not None and \
                    class_id is not None and \
                    class_id not in self.offered_by_sharing:
                sharing = None  # a cheaper statement, the same rows
            asked = (class_id, amount, plan.in_tree) + tuple(
                db_filters.hashable(f) for f in (
                    plan.filters, plan.tree_filters, sharing))
            rows = read.get(asked)
            if rows is None:
                rows = read[asked] = db_suppliers.suppliers(
                    self.conn, roots, class_id, amount, plan.filters,
                    plan.tree_filters, plan.in_tree, self.sharing, sharing,
                    self.request.partitions)
            by_anchor = collections.defaultdict(set)
            for provider, anchor in rows:
                if anchor in members:
                    by_anchor[anchor].add(provider)
            if not by_anchor:
                return {}
            per_class.append((name, by_anchor))
        anchors = set.intersection(*(set(b) for _n, b in per_class))
        if plan.group.single_provider:
            found = {a: set.intersection(*(b[a] for _n, b in per_class))
                     for a in anchors}
            return {a: p for a, p in found.items() if p}
        return {a: {name: sorted(b[a]) for name, b in per_class}
                for a in anchors}

    def _options(self, plan, rows, traits, nodes):
        group = plan.group
        if group.single_provider:
            return [Option((p,), [(p, name, amount)
                                  for name, _id, amount in plan.classes],
                           [nodes[p].uuid])
                    for p in sorted(rows)]
        names = sorted(rows)
        options = []
        for choice in itertools.product(*(rows[n] for n in names)):
            if self.trait_check:
                have = set().union(*(traits.get(p, ()) for p in choice))
                if not group.required <= have or not all(
                        names_ & have for names_ in group.any_traits):
                    continue
            options.append(Option(
                tuple(sorted(set(choice))),
                [(p, n, group.resources[n]) for p, n in zip(choice, names)],
                sorted({nodes[p].uuid for p in choice})))
        return options

    def _combinations(self, options, inventories=None):
        """An Option per group, in the order of ``itertools.product``,
        lazily, without the combinations ``isolate`` rules out (a
        numbered group never takes a provider another numbered group
        took), nor, when ``distinct``, those that only swap
        interchangeable groups: a claim of eight isolated groups on a
        host of eight devices walks one path, not 8^8. With
        ``inventories`` ({provider: {class: (Inventory, used)}} of the
        classes several groups ask), nor those that already ask more of
        such a provider than it has (the unnumbered group on a device
        a numbered one takes), dropped before the groups after it
        multiply it."""
        return _Walk(options, self.isolated, self.twin,
                     self.shared_classes if inventories else (),
                     inventories).walk(0)

    def _judge(self, anchor, combo, nodes, seen, sharing=None):
        """The candidate ``combo`` (an Option per group) makes, or None
        when a request-wide rule rules it out (what several groups ask of
        one provider was judged as the walk built ``combo``) or it is
        one of ``seen`` (which it joins). ``sharing``: those of its
        providers that carry the sharing trait, when known."""
        for indices in self.request.same_subtree:
            chosen = {p for i in indices for p in combo[i].providers}
            if not _one_above_all(chosen, nodes):
                return None
        totals = {}
        for option in combo:
            for provider, name, amount in option.rows:
                key = provider, name
                totals[key] = totals.get(key, 0) + amount
        if not self.nested:
            used_roots = [nodes[p].root_id for p in {p for p, _n in totals}]
            if len(used_roots) != len(set(used_roots)):
                return None
        # Two trees' candidates are the same one when they use sharing
        # providers only (a sharing provider's own tree among them); one
        # that uses a provider of its own tree that shares nothing is its
        # tree's alone (and a tree's combinations all differ). The others
        # are told apart by what they allocate and how the groups map.
        if sharing is None or not any(
                p not in sharing and nodes[p].root_id == anchor
                for p, _n in totals):
            key = (frozenset(totals.items()),
                   tuple(option.providers for option in combo))
            if key in seen:
                return None
            seen.add(key)
        allocations = {}
        for (provider, name), total in totals.items():
            allocations.setdefault(nodes[provider].uuid, {})[name] = total
        mappings = {label: list(option.uuids)
                    for label, option in zip(self.labels, combo)}
        return self.make_candidate(nodes[anchor].uuid, allocations, mappings)


def _earlier_twin(request, plans, index):
    """The last group before ``index`` that is interchangeable with it
    (both numbered, the same classes, amounts and filters, in the same
    same_subtree sets), or None."""
    def shape(i):
        plan = plans[i]
        return (plan.group.single_provider, plan.classes, plan.filters,
                plan.tree_filters, plan.sharing_filters, plan.in_tree,
                [i in indices for indices in request.same_subtree])

    if not plans[index].group.single_provider:
        return None
    for earlier in range(index - 1, -1, -1):
        if shape(earlier) == shape(index):
            return earlier
    return None


def _providers(rows):
    if isinstance(rows, dict):
        return set().union(*rows.values())
    return rows


def _batches(anchors, want, result, found):
    """``anchors`` a batch at a time: all at once when every candidate
    is wanted, else first as many as could make ``want`` candidates if
    every way of meeting each group (``found``, its rows per anchor) was
    one, then as many as the candidates found so far per anchor say will
    fill ``want`` (``result``, which the caller grows). One tree of eight
    devices gives 40,320 candidates, and reading the other trees of the
    slice would cost more than judging the thousand wanted; a slice of
    flat trees is read in one batch."""
    if want is None:
        yield anchors
        return
    size, could = 0, 0
    while size < len(anchors) and could < want:
        could += _ways(found, anchors[size])
        size += 1
    done = 0
    while done < len(anchors):
        if done:
            per_anchor = max(len(result), 1) / done
            size = max(_FEW_ANCHORS,
                       int((want - len(result)) / per_anchor) + 1)
        yield anchors[done:done + size]
        done += size


def _ways(found, anchor):
    """How many candidates ``anchor`` makes at most: the product of the
    ways each group's rows (``found``) meet it."""
    ways = 1
    for rows in found:
        mine = rows[anchor]
        if isinstance(mine, dict):
            for providers in mine.values():
                ways *= len(providers)
        else:
            ways *= len(mine)
    return ways


def _one_above_all(chosen, nodes):
    """Whether one of ``chosen`` is an ancestor (or itself) of all."""
    if len(chosen) <= 1:
        return True
    lines = []
    for provider in chosen:
        line, current = set(), provider
        while current is not None:
            line.add(current)
            current = nodes[current].parent_id if current in nodes else None
        lines.append(line)
    return bool(set.intersection(*lines) & chosen)


class _Walk(object):
    """One depth-first walk of the groups' options (``Search.
    _combinations``): the option chosen and its index per group so far,
    the providers isolated groups took, and what the chosen options ask
    of each provider and ``watched`` class (those several groups ask)."""

    def __init__(self, options, isolated, twin, watched, inventories):
        self.options, self.isolated, self.twin = options, isolated, twin
        self.watched, self.inventories = watched, inventories
        self.chosen = [None] * len(options)
        self.at = [0] * len(options)
        self.taken = set()
        self.asked = collections.Counter()

    def walk(self, i):
        """Every combination that extends the choices of groups before
        ``i``."""
        if i == len(self.options):
            yield tuple(self.chosen)
            return
        # A group interchangeable with an earlier one starts where that
        # one is: the combinations before it only swap the two.
        twin = self.twin[i]
        first = self.at[twin] if twin is not None else 0
        for k in range(first, len(self.options[i])):
            option = self.options[i][k]
            rows = [r for r in option.rows if r[1] in self.watched]
            if not self._admits(i, option, rows):
                continue
            self._take(i, option, rows, +1)
            self.chosen[i], self.at[i] = option, k
            yield from self.walk(i + 1)
            self._take(i, option, rows, -1)

    def _admits(self, i, option, rows):
        if self.isolated[i] and option.providers[0] in self.taken:
            return False
        for provider, name, amount in rows:
            inventory, used = self.inventories[provider][name]
            total = self.asked[provider, name] + amount
            if total > inventory.max_unit or \
                    not capacity.fits(inventory, used + total):
                return False
        return True

    def _take(self, i, option, rows, sign):
        """Count ``option`` as chosen for group ``i`` (``sign`` +1), or
        no longer (-1)."""
        if self.isolated[i]:
            if sign > 0:
                self.taken.add(option.providers[0])
            else:
                self.taken.discard(option.providers[0])
        for provider, name, amount in rows:
            self.asked[provider, name] += sign * amount
