"""messages indexed by the time they were stored

Each round of `lorelab run` reads the mail stored since the previous round for commands and
reviewers' inline diffs (bot.runs.rounds). Without an index on `messages.ingested_at` every
round read the whole table.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04 04:40:00.000000
"""

from alembic import op

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_messages_ingested_at', 'messages', ['ingested_at'])


def downgrade() -> None:
    op.drop_index('ix_messages_ingested_at', table_name='messages')
