"""the fix-ups sent for a series version's patches

mm's fix-ups (`[PATCH v8 3/6] ... (fix)`, `[PATCH v6 10/13 -fix]`) were grouped as a posting
and stored as an incomplete version of their own; they are the version's now
(bot.series.fix_ups), kept with it as [msgid, number] pairs.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-05 23:50:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('series_versions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('fix_ups', sa.JSON(), server_default='[]', nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('series_versions', schema=None) as batch_op:
        batch_op.drop_column('fix_ups')
