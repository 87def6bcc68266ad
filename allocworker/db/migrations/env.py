from alembic import context

from allocworker.db import schema

connection = context.config.attributes['connection']
# Each migration commits on its own: a sync under load from an older
# release, run as one transaction, held the locks of its first
# migrations while a later one waited for the providers' lock that old
# workers held, and deadlocked with them (PostgreSQL, 0012).
context.configure(connection=connection, target_metadata=schema.metadata,
                  render_as_batch=connection.dialect.name == 'sqlite',
                  transaction_per_migration=True)
with context.begin_transaction():
    context.run_migrations()
