"""mail that cannot stall a list (issue 16, items 6-8): a second, different mail under a
Message-ID already stored is kept (under a stand-in id, with the id it claims), and a series
version one of whose Message-IDs is shared by different mails is flagged ambiguous

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 20:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.add_column(sa.Column('claimed_msgid', sa.String(length=998), nullable=True))
        batch_op.create_index(batch_op.f('ix_messages_claimed_msgid'), ['claimed_msgid'],
                              unique=False)
    with op.batch_alter_table('series_versions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('ambiguous', sa.Boolean(), nullable=False,
                                      server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table('series_versions', schema=None) as batch_op:
        batch_op.drop_column('ambiguous')
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_messages_claimed_msgid'))
        batch_op.drop_column('claimed_msgid')
