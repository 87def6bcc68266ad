"""Queries on topology levels: the aggregates each level maps to domain
labels, and the domains of root providers.

A root's domain at a level is the label of the level's aggregate that the
root (not a child of it) is a member of; membership lives in
``provider_aggregates``. Level ``partition`` has no aggregates: a root's
label there is its own ``partition`` column (``partitions.domain``),
read beside the others' labels here; its other reads are
db/grouping/partition_domains.py's.
"""

import collections
import functools

from oslo_utils import timeutils
import sqlalchemy as sa

from allocworker.db import api
from allocworker.db.grouping import epoch as db_epoch
from allocworker.db import prepared
from allocworker.db import schema
from allocworker import partitions

_l = schema.topology_levels
_d = schema.topology_domains
_pa = schema.provider_aggregates
_p = schema.providers
_i = schema.inventories

Level = collections.namedtuple('Level', ['id', 'name', 'generation'])
# Past this many roots, their labels are read by a join, not one by one.
MANY_ROOTS = 200


def levels(conn, names=None):
    """[Level] by name (every level when ``names`` is None)."""
    query = sa.select(_l.c.id, _l.c.name, _l.c.generation).order_by(
        _l.c.name)
    if names is not None:
        query = query.where(_l.c.name.in_(sorted(set(names))))
    return [Level(*row) for row in conn.execute(query)]


def lock(conn, name):
    """The level, locked, or None."""
    row = conn.execute(api.for_update(
        sa.select(_l.c.id, _l.c.name, _l.c.generation)
        .where(_l.c.name == name))).first()
    return Level(*row) if row else None


def create(conn, name):
    """A new level with no domains: its Level."""
    conn.execute(sa.insert(_l).values(name=name, generation=1,
                                      created_at=timeutils.utcnow()))
    return lock(conn, name)


def replace_domains(conn, level, domains):
    """Make ``domains`` ({aggregate uuid: label}) the level's, and move
    its generation: the new generation."""
    conn.execute(sa.delete(_d).where(_d.c.level_id == level.id))
    if domains:
        conn.execute(sa.insert(_d), [
            {'level_id': level.id, 'aggregate_uuid': a, 'label': label}
            for a, label in sorted(domains.items())])
    conn.execute(sa.update(_l).where(_l.c.id == level.id).values(
        generation=level.generation + 1, updated_at=timeutils.utcnow()))
    db_epoch.moved(conn)
    return level.generation + 1


def delete(conn, level):
    conn.execute(sa.delete(_d).where(_d.c.level_id == level.id))
    conn.execute(sa.delete(_l).where(_l.c.id == level.id))
    db_epoch.moved(conn)


def domains(conn, level_ids):
    """{level id: {aggregate uuid: label}}."""
    found = collections.defaultdict(dict)
    if level_ids:
        rows = conn.execute(
            sa.select(_d.c.level_id, _d.c.aggregate_uuid, _d.c.label)
            .where(_d.c.level_id.in_(sorted(level_ids))))
        for level_id, aggregate, label in rows:
            found[level_id][aggregate] = label
    return found


def _root_memberships(level_ids):
    """(level id, root id, label) of every root in a level's aggregate."""
    return (sa.select(_d.c.level_id, _pa.c.provider_id, _d.c.label)
            .select_from(_d)
            .join(_pa, _pa.c.aggregate_uuid == _d.c.aggregate_uuid)
            .join(_p, sa.and_(_p.c.id == _pa.c.provider_id,
                              _p.c.root_provider_id == _p.c.id))
            .where(_d.c.level_id.in_(sorted(level_ids))))


def root_counts(conn, level_ids):
    """{level id: {label: number of roots in that domain}}."""
    found = collections.defaultdict(collections.Counter)
    if level_ids:
        rows = _root_memberships(level_ids).subquery()
        query = (sa.select(rows.c.level_id, rows.c.label,
                           sa.func.count(sa.distinct(rows.c.provider_id)))
                 .group_by(rows.c.level_id, rows.c.label))
        for level_id, label, number in conn.execute(query):
            found[level_id][label] = number
    return found


def ambiguous(conn, level_ids, root_ids=None):
    """[(level id, root uuid, [labels])] of roots in two domains of one
    level, among ``root_ids`` (every root when None)."""
    if not level_ids:
        return []
    memberships = _root_memberships(level_ids)
    if root_ids is not None:
        if not root_ids:
            return []
        memberships = memberships.where(
            _pa.c.provider_id.in_(sorted(root_ids)))
    rows = memberships.subquery()
    query = (sa.select(rows.c.level_id, _p.c.uuid, rows.c.label)
             .select_from(rows).join(_p, _p.c.id == rows.c.provider_id)
             .distinct().order_by(rows.c.level_id, _p.c.uuid, rows.c.label))
    labels = collections.defaultdict(list)
    for level_id, uuid, label in conn.execute(query):
        labels[(level_id, uuid)].append(label)
    return [(level_id, uuid, found)
            for (level_id, uuid), found in sorted(labels.items())
            if len(found) > 1]


def labels_of_roots(conn, names, root_ids):
    """{level name: {root id: label}} for the roots that have a domain
    there (``keep``). For a few roots, each root's label at each level is
    a scalar subquery looked up from the root (joined plainly,
    PostgreSQL scanned every membership: 3.8 ms for a hundred roots,
    against 0.4); for many the join reads every membership once (a
    thousand lookups: 11 ms)."""
    names = sorted(set(names))
    found = {name: {} for name in names}
    if not names or not root_ids:
        return found
    if len(root_ids) > MANY_ROOTS:
        _labels_joined(conn, names, sorted(set(root_ids)), found)
        return found
    statement = _labels_by_lookup(conn.dialect.name, tuple(names))
    for row in statement.execute(conn, {'roots': sorted(set(root_ids))}):
        for name, label in zip(names, row[1:]):
            keep(found, name, row[0], label)
    return found


def _labels_joined(conn, names, root_ids, found):
    """``labels_of_roots`` for many roots: each aggregate level's
    memberships joined once, level partition read from the roots."""
    levels = [name for name in names if name != partitions.LEVEL]
    if levels:
        query = (sa.select(_l.c.name, _pa.c.provider_id, _d.c.label)
                 .select_from(_l)
                 .join(_d, _d.c.level_id == _l.c.id)
                 .join(_pa, _pa.c.aggregate_uuid == _d.c.aggregate_uuid)
                 .where(_l.c.name.in_(levels),
                        _pa.c.provider_id.in_(root_ids)))
        for name, root_id, label in conn.execute(query):
            keep(found, name, root_id, label)
    if partitions.LEVEL in names:
        query = sa.select(_p.c.id, _p.c.partition).where(
            _p.c.id.in_(root_ids))
        for root_id, partition in conn.execute(query):
            keep(found, partitions.LEVEL, root_id, partition)


def labels_of_level(conn, name, limit):
    """{root id: label} of every root with a domain at aggregate level
    ``name``, or None when they are more than ``limit``."""
    query = (_root_memberships_of(name).add_columns(_d.c.label)
             .limit(limit + 1))
    found = {name: {}}
    rows = conn.execute(query).all()
    if len(rows) > limit:
        return None
    for root_id, label in rows:
        keep(found, name, root_id, label)
    return found[name]


def keep(found, name, root_id, label):
    """Note in ``found`` {level: {root id: label}} a root's ``label`` at
    level ``name`` as read (None: no domain there, left out). At level
    partition the label read is the root's partition, and a root of
    ``shared`` is kept labelled None: set aside, neither a domain nor
    refused (groups/rules.py)."""
    if label is None:
        return
    if name == partitions.LEVEL:
        label = partitions.domain(label)
    found[name][root_id] = label


@functools.lru_cache(maxsize=16)
def _labels_by_lookup(dialect, names):
    """Each root's label at each level of ``names``, by lookups from the
    roots bound as ``roots``."""
    return prepared.Core(sa.select(
        _p.c.id, *label_columns(_p.c.id, names)).where(
            prepared.in_list(_p.c.id, 'roots', sa.Integer, dialect)))


def label_columns(root, names):
    """A column per level of ``names``: the label of the root in
    ``root`` there (or NULL), looked up from it (at level partition its
    partition: read it through ``keep``); bind ``level_names``."""
    return [_partition_of(root) if name == partitions.LEVEL else
            sa.select(_d.c.label).select_from(_pa)
            .join(_d, _d.c.aggregate_uuid == _pa.c.aggregate_uuid)
            .join(_l, _l.c.id == _d.c.level_id)
            .where(_pa.c.provider_id == root,
                   _l.c.name == sa.bindparam('name_%d' % n, name))
            .limit(1).scalar_subquery() for n, name in enumerate(names)]


def _partition_of(root):
    labelled = _p.alias('labelled_root')
    return sa.select(labelled.c.partition).where(
        labelled.c.id == root).scalar_subquery()


def level_names(names):
    """The values ``label_columns`` binds for ``names``."""
    return {'name_%d' % n: name for n, name in enumerate(names)
            if name != partitions.LEVEL}


def eligible_labels(conn, name, class_ids, excluding=(), limit=None):
    """The labels of level ``name`` whose domain holds a root whose tree
    offers every class of ``class_ids`` (inventory of it, used or not),
    but for those ``excluding``; at most ``limit`` of them. Each label
    stops at its first such root, and each root at its first provider
    offering a class: every step is a scalar subquery with LIMIT 1, run
    per row, so no backend plans a scan of the cloud for it."""
    class_ids = sorted(class_ids)
    statement = _eligible(conn.dialect.name, len(class_ids))
    params = {'level': name, 'excluding': sorted(excluding) or [''],
              'count': limit if limit is not None else 1 << 30}
    params.update(('class_%d' % n, c) for n, c in enumerate(class_ids))
    return {label for label, in statement.execute(conn, params)}


@functools.lru_cache(maxsize=16)
def _eligible(dialect, classes):
    domain = (sa.select(_d.c.level_id, _d.c.label).distinct()
              .select_from(_d).join(_l, _l.c.id == _d.c.level_id)
              .where(_l.c.name == sa.bindparam('level', type_=sa.String),
                     sa.not_(prepared.in_list(_d.c.label, 'excluding',
                                              sa.String, dialect)))
              .subquery('domain'))
    inner = _d.alias('inner_domain')
    member = _pa.alias('member')
    offers = offering(member.c.provider_id, [
        sa.bindparam('class_%d' % n, type_=sa.Integer)
        for n in range(classes)])
    first_root = (sa.select(member.c.provider_id).select_from(inner)
                  .join(member,
                        member.c.aggregate_uuid == inner.c.aggregate_uuid)
                  .where(inner.c.level_id == domain.c.level_id,
                         inner.c.label == domain.c.label, *offers)
                  .limit(1).scalar_subquery())
    return prepared.Core(
        sa.select(domain.c.label).where(first_root.isnot(None))
        .limit(sa.bindparam('count', type_=sa.Integer)))


def offering(root, class_ids):
    """Conditions: the tree of ``root`` (an id column) offers every
    class, each a scalar subquery that stops at the first provider (one
    condition per class, in the order of ``class_ids``)."""
    return [sa.select(sa.literal(1)).select_from(_p)
            .join(_i, _i.c.provider_id == _p.c.id)
            .where(_p.c.root_provider_id == root,
                   _i.c.resource_class_id == class_id)
            .limit(1).scalar_subquery().isnot(None)
            for class_id in class_ids]


def offering_roots(conn, class_ids, within=None):
    """How many roots' trees offer every class of ``class_ids``; with
    ``within`` (root ids), the set of those among them that do."""
    r = _p.alias('offering_root')
    query = sa.select(r.c.id).where(r.c.id == r.c.root_provider_id,
                                    *offering(r.c.id, sorted(class_ids)))
    if within is None:
        return conn.execute(sa.select(sa.func.count()).select_from(
            query.subquery())).scalar()
    if not within:
        return set()
    return {root for root, in conn.execute(
        query.where(r.c.id.in_(sorted(within))))}


def root_uuids(conn, root_ids):
    """{provider id: uuid}."""
    if not root_ids:
        return {}
    return dict(conn.execute(sa.select(_p.c.id, _p.c.uuid).where(
        _p.c.id.in_(sorted(set(root_ids))))).all())


def roots_in(conn, name, labels, limit):
    """The ids of the roots in the domains ``labels`` of level ``name``,
    or None when there are more than ``limit``."""
    if not labels:
        return frozenset()
    query = (_root_memberships_of(name)
             .where(_d.c.label.in_(sorted(labels))).limit(limit + 1))
    found = frozenset(root for root, in conn.execute(query))
    return None if len(found) > limit else found


def _root_memberships_of(name):
    return (sa.select(_pa.c.provider_id).select_from(_d)
            .join(_l, _l.c.id == _d.c.level_id)
            .join(_pa, _pa.c.aggregate_uuid == _d.c.aggregate_uuid)
            .join(_p, sa.and_(_p.c.id == _pa.c.provider_id,
                              _p.c.root_provider_id == _p.c.id))
            .where(_l.c.name == name))


def all_labels(conn, names):
    """{level name: {label}} of every domain a level maps to."""
    return {name: set(domains.values())
            for name, domains in domains_of(conn, names).items()}


def domains_of(conn, names):
    """{level name: {aggregate uuid: label}}: the levels' domains as
    ``set_topology_level`` set them."""
    found = {name: {} for name in names}
    if names:
        query = (sa.select(_l.c.name, _d.c.aggregate_uuid, _d.c.label)
                 .select_from(_l).join(_d, _d.c.level_id == _l.c.id)
                 .where(_l.c.name.in_(sorted(set(names)))))
        for name, aggregate, label in conn.execute(query):
            found[name][aggregate] = label
    return found


def aggregates_column(root):
    """A column: the uuids of the aggregates the root in ``root`` is a
    member of, as an array (PostgreSQL), for ``label_in`` to map: one
    index lookup per root, where a label looked up per level joins the
    level's domains for each root."""
    return sa.func.array(sa.select(_pa.c.aggregate_uuid).where(
        _pa.c.provider_id == root).scalar_subquery())


def label_in(domains, aggregates):
    """The label of the first of ``aggregates`` in ``domains``
    ({aggregate uuid: label}, a level's), or None."""
    return next((domains[a] for a in aggregates or () if a in domains),
                None)


def groups_naming(conn, name):
    """The uuids of the groups whose rules name level ``name`` (rules are
    stored as groups/rules.py dumps them)."""
    g = schema.consumer_groups
    rows = conn.execute(sa.select(g.c.uuid, g.c.rules).where(
        g.c.rules.isnot(None), g.c.rules.contains('"scope": "%s"' % name)))
    return sorted(uuid for uuid, _rules in rows)
