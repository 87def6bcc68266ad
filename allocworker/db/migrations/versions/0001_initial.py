"""Providers, inventories, resource classes, consumers, allocations, events.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None

MYSQL = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}
PRECISE_TIME = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def _timestamps():
    return [sa.Column('created_at', sa.DateTime, nullable=False),
            sa.Column('updated_at', sa.DateTime, nullable=True)]


def upgrade():
    op.create_table(
        'generations',
        sa.Column('id', sa.BigInteger().with_variant(sa.Integer, 'sqlite'),
                  primary_key=True, autoincrement=True),
        sa.PrimaryKeyConstraint('id', name='pk_generations'),
        sqlite_autoincrement=True, **MYSQL)

    op.create_table(
        'resource_classes',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('name', sa.String(255), nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_resource_classes'),
        sa.UniqueConstraint('name', name='uq_resource_classes_name'),
        **MYSQL)

    op.create_table(
        'providers',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(200), nullable=False),
        sa.Column('generation', sa.BigInteger, nullable=False),
        sa.Column('parent_provider_id', sa.Integer, nullable=True),
        sa.Column('root_provider_id', sa.Integer, nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_providers'),
        sa.ForeignKeyConstraint(
            ['parent_provider_id'], ['providers.id'],
            name='fk_providers_parent_provider_id_providers'),
        sa.ForeignKeyConstraint(
            ['root_provider_id'], ['providers.id'],
            name='fk_providers_root_provider_id_providers'),
        sa.UniqueConstraint('uuid', name='uq_providers_uuid'),
        sa.UniqueConstraint('name', name='uq_providers_name'),
        sa.Index('ix_providers_root_provider_id', 'root_provider_id'),
        sa.Index('ix_providers_parent_provider_id', 'parent_provider_id'),
        **MYSQL)

    op.create_table(
        'inventories',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('provider_id', sa.Integer, nullable=False),
        sa.Column('resource_class_id', sa.Integer, nullable=False),
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
        sa.PrimaryKeyConstraint('id', name='pk_inventories'),
        sa.ForeignKeyConstraint(
            ['provider_id'], ['providers.id'],
            name='fk_inventories_provider_id_providers'),
        sa.ForeignKeyConstraint(
            ['resource_class_id'], ['resource_classes.id'],
            name='fk_inventories_resource_class_id_resource_classes'),
        sa.UniqueConstraint(
            'provider_id', 'resource_class_id',
            name='uq_inventories_provider_id_resource_class_id'),
        **MYSQL)

    op.create_table(
        'consumers',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('user_id', sa.String(255), nullable=False),
        sa.Column('consumer_type', sa.String(255), nullable=False),
        sa.Column('generation', sa.BigInteger, nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_consumers'),
        sa.UniqueConstraint('uuid', name='uq_consumers_uuid'),
        sa.Index('ix_consumers_project_id_id', 'project_id', 'id'),
        **MYSQL)

    op.create_table(
        'allocations',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('consumer_id', sa.Integer, nullable=False),
        sa.Column('provider_id', sa.Integer, nullable=False),
        sa.Column('resource_class_id', sa.Integer, nullable=False),
        sa.Column('used', sa.BigInteger, nullable=False),
        *_timestamps(),
        sa.PrimaryKeyConstraint('id', name='pk_allocations'),
        sa.ForeignKeyConstraint(
            ['consumer_id'], ['consumers.id'],
            name='fk_allocations_consumer_id_consumers'),
        sa.ForeignKeyConstraint(
            ['provider_id'], ['providers.id'],
            name='fk_allocations_provider_id_providers'),
        sa.ForeignKeyConstraint(
            ['resource_class_id'], ['resource_classes.id'],
            name='fk_allocations_resource_class_id_resource_classes'),
        sa.UniqueConstraint(
            'consumer_id', 'provider_id', 'resource_class_id',
            name='uq_allocations_consumer_id_provider_id_resource_class_id'),
        sa.Index('ix_allocations_provider_id_resource_class_id_used',
                 'provider_id', 'resource_class_id', 'used'),
        **MYSQL)

    op.create_table(
        'events',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('consumer_uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('tag', sa.String(255), nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('received_at', PRECISE_TIME, nullable=False),
        sa.Column('held_until', PRECISE_TIME, nullable=True),
        sa.PrimaryKeyConstraint('id', name='pk_events'),
        sa.UniqueConstraint(
            'consumer_uuid', 'name', 'tag', 'status',
            name='uq_events_consumer_uuid_name_tag_status'),
        sa.Index('ix_events_received_at', 'received_at'),
        sa.Index('ix_events_held_until', 'held_until'),
        **MYSQL)
