from alembic import context

from allocworker.db import schema

connection = context.config.attributes['connection']
context.configure(connection=connection, target_metadata=schema.metadata,
                  render_as_batch=connection.dialect.name == 'sqlite')
with context.begin_transaction():
    context.run_migrations()
