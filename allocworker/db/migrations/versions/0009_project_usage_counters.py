"""Usage counters per project (and consumer type), filled from the
allocations, so project limits are judged in constant time.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from alembic import op
import sqlalchemy as sa

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'project_usages',
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('consumer_type', sa.String(255), nullable=False),
        sa.Column('resource_class_id', sa.Integer, nullable=False),
        sa.Column('shard', sa.SmallInteger, nullable=False),
        sa.Column('used', sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint('project_id', 'consumer_type',
                                'resource_class_id', 'shard',
                                name='pk_project_usages'),
        sa.ForeignKeyConstraint(
            ['resource_class_id'], ['resource_classes.id'],
            name='fk_project_usages_resource_class_id_resource_classes'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    op.create_table(
        'project_consumers',
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.Column('consumer_type', sa.String(255), nullable=False),
        sa.Column('shard', sa.SmallInteger, nullable=False),
        sa.Column('consumers', sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint('project_id', 'consumer_type', 'shard',
                                name='pk_project_consumers'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    # Workers of the previous release keep writing while (and after) this
    # runs in a rolling upgrade without moving these counters: "db
    # refresh-room" corrects them once the last such worker is gone.
    op.execute(
        'INSERT INTO project_usages (project_id, consumer_type, '
        'resource_class_id, shard, used) '
        'SELECT c.project_id, c.consumer_type, a.resource_class_id, 0, '
        'SUM(a.used) FROM consumers c JOIN allocations a '
        'ON a.consumer_id = c.id '
        'GROUP BY c.project_id, c.consumer_type, a.resource_class_id')
    op.execute(
        'INSERT INTO project_consumers (project_id, consumer_type, '
        'shard, consumers) '
        'SELECT project_id, consumer_type, 0, COUNT(*) FROM consumers '
        'GROUP BY project_id, consumer_type')
