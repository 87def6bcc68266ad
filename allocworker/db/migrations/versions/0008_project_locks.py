"""Project lock rows, for limits judged inside the allocation transaction.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from alembic import op
import sqlalchemy as sa

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'project_locks',
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint('project_id', name='pk_project_locks'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
