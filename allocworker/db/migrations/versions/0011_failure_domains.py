"""Failure domains: topology levels mapping aggregates to domain labels,
and group rules (RPC 1.5).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06
"""

from alembic import op
import sqlalchemy as sa

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

MYSQL = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def upgrade():
    op.create_table(
        'topology_levels',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('name', sa.String(64), nullable=False),
        sa.Column('generation', sa.BigInteger, nullable=False),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.Column('updated_at', sa.DateTime, nullable=True),
        sa.PrimaryKeyConstraint('id', name='pk_topology_levels'),
        sa.UniqueConstraint('name', name='uq_topology_levels_name'),
        **MYSQL)
    op.create_table(
        'topology_domains',
        sa.Column('level_id', sa.Integer, nullable=False),
        sa.Column('aggregate_uuid', sa.String(36), nullable=False),
        sa.Column('label', sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint('level_id', 'aggregate_uuid',
                                name='pk_topology_domains'),
        sa.ForeignKeyConstraint(
            ['level_id'], ['topology_levels.id'],
            name='fk_topology_domains_level_id_topology_levels'),
        sa.Index('ix_topology_domains_aggregate_uuid', 'aggregate_uuid'),
        **MYSQL)
    with op.batch_alter_table('consumer_groups') as batch:
        batch.alter_column('policy', existing_type=sa.String(32),
                           nullable=True)
        batch.add_column(sa.Column('rules', sa.Text, nullable=True))
