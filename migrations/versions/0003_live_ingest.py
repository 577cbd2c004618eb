"""live ingest: removals recorded from public-inbox archives

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 12:50:00
"""

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('message_removals',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('msgid', sa.String(length=998), nullable=False),
    sa.Column('list_name', sa.String(length=200), nullable=True),
    sa.Column('source', sa.Text(), nullable=False),
    sa.Column('commit', sa.String(length=64), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('detected_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_message_removals')),
    sa.UniqueConstraint('source', 'commit', name=op.f('uq_message_removals_source'))
    )
    with op.batch_alter_table('message_removals', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_message_removals_msgid'), ['msgid'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('message_removals', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_message_removals_msgid'))

    op.drop_table('message_removals')
