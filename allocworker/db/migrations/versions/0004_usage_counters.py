"""Usage counters per provider and class, filled from the allocations.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from alembic import op
import sqlalchemy as sa

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'usages',
        sa.Column('provider_id', sa.Integer, nullable=False),
        sa.Column('resource_class_id', sa.Integer, nullable=False),
        sa.Column('used', sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint('provider_id', 'resource_class_id',
                                name='pk_usages'),
        sa.ForeignKeyConstraint(['provider_id'], ['providers.id'],
                                name='fk_usages_provider_id_providers'),
        sa.ForeignKeyConstraint(
            ['resource_class_id'], ['resource_classes.id'],
            name='fk_usages_resource_class_id_resource_classes'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.execute(
        'INSERT INTO usages (provider_id, resource_class_id, used) '
        'SELECT provider_id, resource_class_id, SUM(used) FROM allocations '
        'GROUP BY provider_id, resource_class_id')
