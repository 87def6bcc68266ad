"""Generations counted per object; the database-wide counter retires.

Every provider, consumer and group keeps counting from the generation it
has. The counter's last value becomes the floor for every uuid, so an
object deleted before this upgrade and created again starts above any
generation it may have had.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from alembic import op
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade():
    retired = op.create_table(
        'retired_generations',
        sa.Column('kind', sa.String(16), nullable=False),
        sa.Column('uuid', sa.String(36), nullable=False),
        sa.Column('generation', sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint('kind', 'uuid',
                                name='pk_retired_generations'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    counter = op.get_bind().execute(
        sa.text('SELECT MAX(id) FROM generations')).scalar()
    if counter is not None:
        op.bulk_insert(retired, [
            {'kind': kind, 'uuid': '*', 'generation': counter}
            for kind in ('provider', 'consumer', 'group')])
    op.drop_table('generations')
