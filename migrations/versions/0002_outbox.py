"""outbox: every reply the bot writes, stored with its Message-ID before it is sent

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 12:05:45.116988
"""

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('outbox',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('message_id', sa.String(length=998), nullable=False),
    sa.Column('kind', sa.String(length=30), nullable=False),
    sa.Column('series_version_id', sa.Integer(), nullable=True),
    sa.Column('in_reply_to', sa.String(length=998), nullable=False),
    sa.Column('subject', sa.Text(), nullable=False),
    sa.Column('author', sa.String(length=320), nullable=False),
    sa.Column('list_address', sa.String(length=320), nullable=True),
    sa.Column('lists', sa.JSON(), nullable=False),
    sa.Column('recipients', sa.JSON(), nullable=False),
    sa.Column('raw', sa.LargeBinary(), nullable=False),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('transport', sa.String(length=20), nullable=True),
    sa.Column('claimed_by', sa.String(length=300), nullable=True),
    sa.Column('lease_until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('decided_by', sa.String(length=200), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('send_started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('sent_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_outbox')),
    sa.UniqueConstraint('message_id', name=op.f('uq_outbox_message_id'))
    )
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_outbox_author'), ['author'], unique=False)
        batch_op.create_index(batch_op.f('ix_outbox_kind'), ['kind'], unique=False)
        batch_op.create_index(batch_op.f('ix_outbox_list_address'), ['list_address'], unique=False)
        batch_op.create_index(batch_op.f('ix_outbox_send_started_at'), ['send_started_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_outbox_series_version_id'), ['series_version_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_outbox_state'), ['state'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_outbox_state'))
        batch_op.drop_index(batch_op.f('ix_outbox_series_version_id'))
        batch_op.drop_index(batch_op.f('ix_outbox_send_started_at'))
        batch_op.drop_index(batch_op.f('ix_outbox_list_address'))
        batch_op.drop_index(batch_op.f('ix_outbox_kind'))
        batch_op.drop_index(batch_op.f('ix_outbox_author'))

    op.drop_table('outbox')
