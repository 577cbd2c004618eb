"""Alembic environment: runs migrations on the engine lorelab hands over (no alembic.ini)."""

from alembic import context

from bot.db.models import Base

config = context.config
engine = config.attributes["engine"]

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=True,  # SQLite cannot ALTER most things; batch mode copies tables
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
