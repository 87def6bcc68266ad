"""Consumer groups and their members.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from alembic import op
import sqlalchemy as sa

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

MYSQL = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4'}


def upgrade():
    op.create_table(
        'consumer_groups',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=True),
        sa.Column('policy', sa.String(32), nullable=False),
        sa.Column('max_per_root', sa.Integer, nullable=True),
        sa.Column('generation', sa.BigInteger, nullable=False),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.Column('updated_at', sa.DateTime, nullable=True),
        sa.PrimaryKeyConstraint('id', name='pk_consumer_groups'),
        sa.UniqueConstraint('uuid', name='uq_consumer_groups_uuid'),
        **MYSQL)
    op.create_table(
        'group_members',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('group_id', sa.Integer, nullable=False),
        sa.Column('consumer_uuid', sa.String(36), nullable=False),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_group_members'),
        sa.ForeignKeyConstraint(
            ['group_id'], ['consumer_groups.id'],
            name='fk_group_members_group_id_consumer_groups'),
        sa.UniqueConstraint('group_id', 'consumer_uuid',
                            name='uq_group_members_group_id_consumer_uuid'),
        sa.Index('ix_group_members_consumer_uuid', 'consumer_uuid'),
        **MYSQL)
