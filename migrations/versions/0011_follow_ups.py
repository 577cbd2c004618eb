"""follow-up campaigns (issue 18)

`runs.parent_run_id`: the review run a follow-up (bisect, align, compare, experiment) follows;
`runs.options`: what the follow-up was asked for (the alternative's Message-ID, the author's
command lines, the boots per bisection step, pairs=N). `lab_campaigns.arm`: what the
campaign's kernel B is within its run ("prefix 2/4", "aligned"); `lab_campaigns.kernel_c`:
a third kernel (the reviewer's alternative), whose boots are stored as kernel "C".

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 23:30:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('runs') as batch:
        batch.add_column(sa.Column('parent_run_id', sa.Integer(), nullable=True))
        batch.add_column(sa.Column('options', sa.JSON(), nullable=False,
                                   server_default=sa.text("'{}'")))
        batch.create_foreign_key('fk_runs_parent_run_id', 'runs', ['parent_run_id'], ['id'],
                                 ondelete='CASCADE')
        batch.create_index('ix_runs_parent_run_id', ['parent_run_id'])
    op.add_column('lab_campaigns', sa.Column('arm', sa.String(length=100), nullable=True))
    op.add_column('lab_campaigns', sa.Column('kernel_c', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('lab_campaigns') as batch:
        batch.drop_column('kernel_c')
        batch.drop_column('arm')
    with op.batch_alter_table('runs') as batch:
        batch.drop_index('ix_runs_parent_run_id')
        batch.drop_constraint('fk_runs_parent_run_id', type_='foreignkey')
        batch.drop_column('options')
        batch.drop_column('parent_run_id')
