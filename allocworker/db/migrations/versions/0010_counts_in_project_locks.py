"""The counts that writers holding a project's lock move, kept in its
lock row.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04
"""

from alembic import op
import sqlalchemy as sa

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('project_locks',
                  sa.Column('counts', sa.Text, nullable=True))
