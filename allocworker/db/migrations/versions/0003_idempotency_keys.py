"""Idempotency keys of allocate items.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from alembic import op
import sqlalchemy as sa

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'idempotency_keys',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('request_hash', sa.String(64), nullable=False),
        sa.Column('answer', sa.Text, nullable=False),
        sa.Column('created_at', sa.DateTime, nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_idempotency_keys'),
        sa.UniqueConstraint('key', name='uq_idempotency_keys_key'),
        sa.Index('ix_idempotency_keys_created_at', 'created_at'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
