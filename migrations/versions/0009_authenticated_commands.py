"""commands that cannot be forged or flood a list (issue 16, items 9-11): each command request
keeps its thread (answers are limited per thread) and who vouched for its sender

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 20:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('command_requests', schema=None) as batch_op:
        batch_op.add_column(sa.Column('thread_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('authenticated_by', sa.String(length=300), nullable=True))
        batch_op.create_index(batch_op.f('ix_command_requests_thread_id'), ['thread_id'],
                              unique=False)


def downgrade() -> None:
    with op.batch_alter_table('command_requests', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_command_requests_thread_id'))
        batch_op.drop_column('authenticated_by')
        batch_op.drop_column('thread_id')
