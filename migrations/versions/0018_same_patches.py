"""series versions whose patches an earlier version's review run measures already

A RESEND, or a new version that changed only changelogs, sends patches an earlier version of
its series sent unchanged; the planner gives it no run of its own and records the run that
measures them (bot.runs.same_patches).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05 16:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('series_versions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('measured_by_run_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f('fk_series_versions_measured_by_run_id_runs'), 'runs',
            ['measured_by_run_id'], ['id'], ondelete='SET NULL')
        batch_op.create_index(batch_op.f('ix_series_versions_measured_by_run_id'),
                              ['measured_by_run_id'])


def downgrade() -> None:
    with op.batch_alter_table('series_versions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_series_versions_measured_by_run_id'))
        batch_op.drop_constraint(
            batch_op.f('fk_series_versions_measured_by_run_id_runs'), type_='foreignkey')
        batch_op.drop_column('measured_by_run_id')
