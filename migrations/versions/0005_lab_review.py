"""lab samples, review runs, email commands

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 14:25:20.692231
"""

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('command_requests',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('message_id', sa.String(length=998), nullable=False),
    sa.Column('line', sa.Integer(), nullable=False),
    sa.Column('sender', sa.String(length=320), nullable=False),
    sa.Column('command', sa.String(length=40), nullable=False),
    sa.Column('arguments', sa.JSON(), nullable=False),
    sa.Column('series_version_id', sa.Integer(), nullable=True),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('run_id', sa.Integer(), nullable=True),
    sa.Column('outbox_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_command_requests')),
    sa.UniqueConstraint('message_id', 'line', name=op.f('uq_command_requests_message_id'))
    )
    with op.batch_alter_table('command_requests', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_command_requests_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_command_requests_sender'), ['sender'], unique=False)
        batch_op.create_index(batch_op.f('ix_command_requests_series_version_id'), ['series_version_id'], unique=False)

    op.create_table('lab_campaigns',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=True),
    sa.Column('benchmark', sa.String(length=100), nullable=False),
    sa.Column('parameters', sa.JSON(), nullable=False),
    sa.Column('kernel_a', sa.Text(), nullable=False),
    sa.Column('kernel_b', sa.Text(), nullable=False),
    sa.Column('host', sa.String(length=200), nullable=False),
    sa.Column('runner', sa.String(length=20), nullable=False),
    sa.Column('seed', sa.Integer(), nullable=False),
    sa.Column('warmup_pairs', sa.Integer(), nullable=False),
    sa.Column('k_min', sa.Integer(), nullable=False),
    sa.Column('k_max', sa.Integer(), nullable=False),
    sa.Column('orders', sa.JSON(), nullable=False),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('result', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], name=op.f('fk_lab_campaigns_run_id_runs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lab_campaigns'))
    )
    with op.batch_alter_table('lab_campaigns', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_lab_campaigns_run_id'), ['run_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_lab_campaigns_state'), ['state'], unique=False)

    op.create_table('lab_samples',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('campaign_id', sa.Integer(), nullable=False),
    sa.Column('metric', sa.String(length=200), nullable=False),
    sa.Column('value', sa.Float(), nullable=False),
    sa.Column('unit', sa.String(length=40), nullable=False),
    sa.Column('kernel', sa.String(length=1), nullable=False),
    sa.Column('pair_index', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('host', sa.String(length=200), nullable=False),
    sa.Column('boot_id', sa.String(length=64), nullable=False),
    sa.Column('accel', sa.String(length=10), nullable=False),
    sa.Column('time', sa.DateTime(timezone=True), nullable=False),
    sa.Column('warmup', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['campaign_id'], ['lab_campaigns.id'], name=op.f('fk_lab_samples_campaign_id_lab_campaigns'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lab_samples'))
    )
    with op.batch_alter_table('lab_samples', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_lab_samples_campaign_id'), ['campaign_id'], unique=False)

    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('trigger', sa.String(length=400), nullable=False, server_default='cli'))
        batch_op.add_column(sa.Column('benchmarks', sa.JSON(), nullable=False, server_default='[]'))
        batch_op.add_column(sa.Column('runner', sa.String(length=200), nullable=True))



def downgrade() -> None:
    with op.batch_alter_table('runs', schema=None) as batch_op:
        batch_op.drop_column('runner')
        batch_op.drop_column('benchmarks')
        batch_op.drop_column('trigger')

    with op.batch_alter_table('lab_samples', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_lab_samples_campaign_id'))

    op.drop_table('lab_samples')
    with op.batch_alter_table('lab_campaigns', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_lab_campaigns_state'))
        batch_op.drop_index(batch_op.f('ix_lab_campaigns_run_id'))

    op.drop_table('lab_campaigns')
    with op.batch_alter_table('command_requests', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_command_requests_series_version_id'))
        batch_op.drop_index(batch_op.f('ix_command_requests_sender'))
        batch_op.drop_index(batch_op.f('ix_command_requests_created_at'))

    op.drop_table('command_requests')
