"""Providers indexed by partition and root: a bound caller's listing
reads a range of its own partition's roots and their providers without
walking the other partitions' rows between them.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06
"""

from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('ix_providers_partition_root_provider_id', 'providers',
                    ['partition', 'root_provider_id'])
