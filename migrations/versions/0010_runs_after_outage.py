"""runs that finish after an outage (issue 16, item 12)

`run_steps.sent_at`: when a step was last sent to the workers (NULL: never), so that the
reaper of `lorelab run` (bot/runs/reaper.py) finds steps that were never sent or waited past
their deadline.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 20:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('run_steps', sa.Column('sent_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('run_steps') as batch:
        batch.drop_column('sent_at')
