"""The tables. Migrations under ``migrations/`` must produce exactly these
(a functional test compares them on every backend)."""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

metadata = sa.MetaData(naming_convention={
    'ix': 'ix_%(table_name)s_%(column_0_N_name)s',
    'uq': 'uq_%(table_name)s_%(column_0_N_name)s',
    'fk': 'fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s',
    'pk': 'pk_%(table_name)s',
})

# MySQL needs InnoDB for row locks and foreign keys; utf8mb4 for any name.
_mysql = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


# Event order matters to waiters, so keep sub-second precision on MySQL too.
_PRECISE_TIME = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def _timestamps():
    return [sa.Column('created_at', sa.DateTime, nullable=False),
            sa.Column('updated_at', sa.DateTime, nullable=True)]


# The last generation of deleted providers, consumers and groups, so a
# uuid never sees the same generation twice (see db/generations.py).
retired_generations = sa.Table(
    'retired_generations', metadata,
    sa.Column('kind', sa.String(16), primary_key=True),
    sa.Column('uuid', sa.String(36), primary_key=True),
    sa.Column('generation', sa.BigInteger, nullable=False),
    **_mysql)

resource_classes = sa.Table(
    'resource_classes', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('name', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('name'),
    **_mysql)

providers = sa.Table(
    'providers', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('name', sa.String(200), nullable=False),
    sa.Column('generation', sa.BigInteger, nullable=False),
    sa.Column('parent_provider_id', sa.Integer,
              sa.ForeignKey('providers.id'), nullable=True),
    sa.Column('root_provider_id', sa.Integer,
              sa.ForeignKey('providers.id'), nullable=True),
    *_timestamps(),
    # RPC 1.6 (allocworker/partitions.py): every provider of a tree has
    # its root's. The server default is for writers that do not name it:
    # workers of the previous release during a rolling upgrade, and
    # ``placement import``.
    sa.Column('partition', sa.String(64), nullable=False,
              server_default='default'),
    sa.UniqueConstraint('uuid'),
    # Names are unique per partition; the key also serves reads of one
    # partition's providers (by name), and ``name`` alone the lookups by
    # name across partitions (Placement's ``?name=``).
    sa.UniqueConstraint('partition', 'name'),
    sa.Index(None, 'name'),
    sa.Index(None, 'root_provider_id'),
    sa.Index(None, 'parent_provider_id'),
    # A range of one partition's trees (a bound caller's listing).
    sa.Index(None, 'partition', 'root_provider_id'),
    **_mysql)

inventories = sa.Table(
    'inventories', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('provider_id', sa.Integer, sa.ForeignKey('providers.id'),
              nullable=False),
    sa.Column('resource_class_id', sa.Integer,
              sa.ForeignKey('resource_classes.id'), nullable=False),
    sa.Column('total', sa.BigInteger, nullable=False),
    sa.Column('reserved', sa.BigInteger, nullable=False),
    sa.Column('min_unit', sa.BigInteger, nullable=False),
    sa.Column('max_unit', sa.BigInteger, nullable=False),
    sa.Column('step_size', sa.BigInteger, nullable=False),
    sa.Column('allocation_ratio', sa.Float, nullable=False),
    # Set when a forced change left capacity below usage; audits accept
    # over-capacity only there.
    sa.Column('forced', sa.Boolean, nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('provider_id', 'resource_class_id'),
    **_mysql)

consumers = sa.Table(
    'consumers', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('project_id', sa.String(255), nullable=False),
    sa.Column('user_id', sa.String(255), nullable=False),
    sa.Column('consumer_type', sa.String(255), nullable=False),
    sa.Column('generation', sa.BigInteger, nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('uuid'),
    sa.Index(None, 'project_id', 'id'),
    **_mysql)

allocations = sa.Table(
    'allocations', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('consumer_id', sa.Integer, sa.ForeignKey('consumers.id'),
              nullable=False),
    sa.Column('provider_id', sa.Integer, sa.ForeignKey('providers.id'),
              nullable=False),
    sa.Column('resource_class_id', sa.Integer,
              sa.ForeignKey('resource_classes.id'), nullable=False),
    sa.Column('used', sa.BigInteger, nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('consumer_id', 'provider_id', 'resource_class_id'),
    sa.Index(None, 'provider_id', 'resource_class_id', 'used'),
    **_mysql)

events = sa.Table(
    'events', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('consumer_uuid', sa.String(36), nullable=False),
    sa.Column('name', sa.String(255), nullable=False),
    # '' rather than NULL for an untagged event keeps the unique key simple.
    sa.Column('tag', sa.String(255), nullable=False),
    sa.Column('status', sa.String(16), nullable=False),
    sa.Column('received_at', _PRECISE_TIME, nullable=False),
    # Set while the event waits for its consumer to appear; cleared when
    # the consumer is created in time, expired by the worker otherwise.
    sa.Column('held_until', _PRECISE_TIME, nullable=True),
    sa.UniqueConstraint('consumer_uuid', 'name', 'tag', 'status'),
    sa.Index(None, 'received_at'),
    sa.Index(None, 'held_until'),
    **_mysql)

consumer_groups = sa.Table(
    'consumer_groups', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('name', sa.String(255), nullable=False),
    sa.Column('project_id', sa.String(255), nullable=True),
    # The 1.0 form (one rule at scope root), NULL for a group made of
    # ``rules`` that it cannot express.
    sa.Column('policy', sa.String(32), nullable=True),
    sa.Column('max_per_root', sa.Integer, nullable=True),
    sa.Column('generation', sa.BigInteger, nullable=False),
    *_timestamps(),
    # JSON: the group's rules (groups/rules.py); NULL: the one rule that
    # ``policy`` and ``max_per_root`` say.
    sa.Column('rules', sa.Text, nullable=True),
    # A token replaced by every write that changes the members or what
    # they hold, and (JSON) the last such changes, each with the token
    # it left (groups/kept.py); NULL: nothing to keep members under.
    sa.Column('members_token', sa.BigInteger, nullable=True),
    sa.Column('members_log', sa.Text, nullable=True),
    sa.UniqueConstraint('uuid'),
    **_mysql)

# Failure domains (RPC 1.5): a topology level maps aggregates to domain
# labels; a root's domain at a level is the label of the level's
# aggregate it is a member of (db/grouping/topology.py).
topology_levels = sa.Table(
    'topology_levels', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('name', sa.String(64), nullable=False),
    sa.Column('generation', sa.BigInteger, nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('name'),
    **_mysql)

# One row: the token of db/grouping/epoch.py.
topology_epoch = sa.Table(
    'topology_epoch', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=False),
    sa.Column('token', sa.BigInteger, nullable=False),
    **_mysql)

topology_domains = sa.Table(
    'topology_domains', metadata,
    sa.Column('level_id', sa.Integer, sa.ForeignKey('topology_levels.id'),
              primary_key=True),
    sa.Column('aggregate_uuid', sa.String(36), primary_key=True),
    sa.Column('label', sa.String(255), nullable=False),
    sa.Index(None, 'aggregate_uuid'),
    **_mysql)

# Members are consumer uuids, not consumer rows: membership outlives the
# consumer's allocations coming and going.
group_members = sa.Table(
    'group_members', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('group_id', sa.Integer, sa.ForeignKey('consumer_groups.id'),
              nullable=False),
    sa.Column('consumer_uuid', sa.String(36), nullable=False),
    sa.Column('created_at', sa.DateTime, nullable=False),
    sa.UniqueConstraint('group_id', 'consumer_uuid'),
    sa.Index(None, 'consumer_uuid'),
    **_mysql)

# The answer to an allocate item, kept under its caller's idempotency key
# in the same transaction as the write it answers.
idempotency_keys = sa.Table(
    'idempotency_keys', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('key', sa.String(255), nullable=False),
    sa.Column('request_hash', sa.String(64), nullable=False),
    sa.Column('answer', sa.Text, nullable=False),
    sa.Column('created_at', sa.DateTime, nullable=False),
    sa.UniqueConstraint('key'),
    sa.Index(None, 'created_at'),
    **_mysql)

# What is allocated per provider and class, kept by the transaction that
# changes the allocations (it holds the provider's lock), so a capacity
# check reads one row instead of summing every allocation. Every
# inventory has its row (``used`` 0 until something is allocated).
usages = sa.Table(
    'usages', metadata,
    sa.Column('provider_id', sa.Integer, sa.ForeignKey('providers.id'),
              primary_key=True),
    sa.Column('resource_class_id', sa.Integer,
              sa.ForeignKey('resource_classes.id'), primary_key=True),
    sa.Column('used', sa.BigInteger, nullable=False),
    # The room left: the inventory's capacity rounded down, minus used.
    # Kept by the same statements as ``used``, and by inventory writes;
    # indexed so that a claim reads the roots with the most (or least)
    # room first without reading the cloud (scheduling/windows.py).
    sa.Column('free', sa.BigInteger, nullable=False, server_default='0'),
    sa.Index(None, 'resource_class_id', 'free', 'provider_id'),
    **_mysql)

# Qualitative facts about providers (os-traits names and CUSTOM_ ones), and
# the aggregates providers belong to; Placement's API carries both, and
# allocation candidates read them (sharing providers are found through
# aggregates).
traits = sa.Table(
    'traits', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('name', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('name'),
    **_mysql)

provider_traits = sa.Table(
    'provider_traits', metadata,
    sa.Column('provider_id', sa.Integer, sa.ForeignKey('providers.id'),
              primary_key=True),
    sa.Column('trait_id', sa.Integer, sa.ForeignKey('traits.id'),
              primary_key=True),
    sa.Index(None, 'trait_id'),
    **_mysql)

provider_aggregates = sa.Table(
    'provider_aggregates', metadata,
    sa.Column('provider_id', sa.Integer, sa.ForeignKey('providers.id'),
              primary_key=True),
    sa.Column('aggregate_uuid', sa.String(36), primary_key=True),
    sa.Index(None, 'aggregate_uuid'),
    **_mysql)

# One row per project whose writes are judged against its limits: a write
# locks its projects' rows last (project_id order), so concurrent writers
# of one project serialize on that project (see db/limits/quota.py). ``counts``
# is the part of the project's counters moved by the writers that held
# this row's lock (JSON, db/limits/project_counters.py; NULL: nothing yet).
project_locks = sa.Table(
    'project_locks', metadata,
    sa.Column('project_id', sa.String(255), primary_key=True),
    sa.Column('counts', sa.Text, nullable=True),
    **_mysql)

# What each project's consumers hold, per consumer type and class, and how
# many consumers it has per type: counters moved by every write in the
# transaction that writes the allocations (as ``usages`` is per provider),
# so the limits judge a project in one read whatever its size. Kept per
# consumer type so that ``[quota] counted_consumer_types`` can change
# without a rebuild; an untyped consumer is counted under '' (as stored).
# Each count is split over a few rows (``shard``, one chosen at random per
# transaction): a counter row stays locked from a writer's upsert to its
# COMMIT, and without the split every two concurrent writers of one
# project, limits on or off, would queue there. A writer holding the
# project's lock moves its counts in ``project_locks.counts`` instead: a
# count is the sum of its rows here and its entry there
# (db/limits/project_counters.py).
project_usages = sa.Table(
    'project_usages', metadata,
    sa.Column('project_id', sa.String(255), primary_key=True),
    sa.Column('consumer_type', sa.String(255), primary_key=True),
    sa.Column('resource_class_id', sa.Integer,
              sa.ForeignKey('resource_classes.id'), primary_key=True),
    sa.Column('shard', sa.SmallInteger, primary_key=True),
    sa.Column('used', sa.BigInteger, nullable=False),
    **_mysql)

project_consumers = sa.Table(
    'project_consumers', metadata,
    sa.Column('project_id', sa.String(255), primary_key=True),
    sa.Column('consumer_type', sa.String(255), primary_key=True),
    sa.Column('shard', sa.SmallInteger, primary_key=True),
    sa.Column('consumers', sa.BigInteger, nullable=False),
    **_mysql)
