"""Provider traits and aggregates.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from alembic import op
import sqlalchemy as sa

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

MYSQL = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def upgrade():
    op.create_table(
        'traits',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.Column('updated_at', sa.DateTime, nullable=True),
        sa.PrimaryKeyConstraint('id', name='pk_traits'),
        sa.UniqueConstraint('name', name='uq_traits_name'),
        **MYSQL)
    op.create_table(
        'provider_traits',
        sa.Column('provider_id', sa.Integer, nullable=False),
        sa.Column('trait_id', sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint('provider_id', 'trait_id',
                                name='pk_provider_traits'),
        sa.ForeignKeyConstraint(
            ['provider_id'], ['providers.id'],
            name='fk_provider_traits_provider_id_providers'),
        sa.ForeignKeyConstraint(
            ['trait_id'], ['traits.id'],
            name='fk_provider_traits_trait_id_traits'),
        sa.Index('ix_provider_traits_trait_id', 'trait_id'),
        **MYSQL)
    op.create_table(
        'provider_aggregates',
        sa.Column('provider_id', sa.Integer, nullable=False),
        sa.Column('aggregate_uuid', sa.String(36), nullable=False),
        sa.PrimaryKeyConstraint('provider_id', 'aggregate_uuid',
                                name='pk_provider_aggregates'),
        sa.ForeignKeyConstraint(
            ['provider_id'], ['providers.id'],
            name='fk_provider_aggregates_provider_id_providers'),
        sa.Index('ix_provider_aggregates_aggregate_uuid', 'aggregate_uuid'),
        **MYSQL)
