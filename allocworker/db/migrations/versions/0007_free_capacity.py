"""Free capacity kept per provider and class, indexed, so a claim finds
the roots with the most (or least) room without reading the cloud.

Every inventory gets its usage counter row (a row per inventory is now
an invariant), and ``free`` is the room left: the capacity rounded down
minus what is used.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from alembic import op
import sqlalchemy as sa

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('usages', sa.Column('free', sa.BigInteger, nullable=False,
                                      server_default='0'))
    op.execute(
        'INSERT INTO usages (provider_id, resource_class_id, used, free) '
        'SELECT i.provider_id, i.resource_class_id, 0, 0 '
        'FROM inventories i LEFT JOIN usages u '
        'ON u.provider_id = i.provider_id '
        'AND u.resource_class_id = i.resource_class_id '
        'WHERE u.provider_id IS NULL')
    capacity = '(i.total - i.reserved) * i.allocation_ratio'
    # Rounded down: PostgreSQL and MySQL round a CAST; SQLite's truncates,
    # which is the same for the non-negative capacities it can hold.
    rounded = ('CAST(%s AS INTEGER)' if op.get_bind().dialect.name ==
               'sqlite' else 'FLOOR(%s)') % capacity
    if op.get_bind().dialect.name == 'mysql':
        op.execute(
            'UPDATE usages u LEFT JOIN inventories i '
            'ON i.provider_id = u.provider_id '
            'AND i.resource_class_id = u.resource_class_id '
            'SET u.free = COALESCE(%s, 0) - u.used' % rounded)
    else:
        op.execute(
            'UPDATE usages SET free = COALESCE((SELECT %s FROM inventories i '
            'WHERE i.provider_id = usages.provider_id '
            'AND i.resource_class_id = usages.resource_class_id), 0) - used'
            % rounded)
    op.create_index('ix_usages_resource_class_id_free_provider_id', 'usages',
                    ['resource_class_id', 'free', 'provider_id'])
