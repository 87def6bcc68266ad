"""Partitions (RPC 1.6): every provider lies in one, existing providers
in ``default``; provider names are unique per partition.

The column's server default stays: workers of the previous release,
which do not name a partition, keep creating providers (in ``default``)
during a rolling upgrade.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-10
"""

from alembic import op
import sqlalchemy as sa

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade():
    if op.get_bind().dialect.name == 'postgresql':
        # The strongest lock first, once: taken step by step, a writer
        # of the previous release could slip in between.
        op.execute('LOCK TABLE providers IN ACCESS EXCLUSIVE MODE')
    with op.batch_alter_table('providers') as batch:
        batch.add_column(sa.Column('partition', sa.String(64),
                                   nullable=False, server_default='default'))
        batch.drop_constraint('uq_providers_name', type_='unique')
        batch.create_unique_constraint('uq_providers_partition_name',
                                       ['partition', 'name'])
        batch.create_index('ix_providers_name', ['name'])
