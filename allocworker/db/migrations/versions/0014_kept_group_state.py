"""What lets a worker keep group members and roots' labels between
transactions: a token per group that every change to its members
replaces, with a log of the last changes, and the topology's epoch (one
row).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06
"""

import secrets

from alembic import op
import sqlalchemy as sa

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('consumer_groups',
                  sa.Column('members_token', sa.BigInteger, nullable=True))
    op.add_column('consumer_groups',
                  sa.Column('members_log', sa.Text, nullable=True))
    epoch = op.create_table(
        'topology_epoch',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=False),
        sa.Column('token', sa.BigInteger, nullable=False),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.bulk_insert(epoch, [{'id': 1, 'token': secrets.randbits(63)}])
