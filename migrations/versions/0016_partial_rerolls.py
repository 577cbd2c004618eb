"""series versions that re-send some patches of the version before (partial rerolls)

A `[PATCH v4 2/8]` sent alone in reply to v3's 2/8 means v3 with that patch replaced; b4 reads
it so. `series_versions.reroll_of_id` links such a version to the one whose patches stand for
the numbers it did not send again (bot.series.rerolls). Filled by `lorelab ingest reparse`.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04 09:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('series_versions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('reroll_of_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f('fk_series_versions_reroll_of_id_series_versions'), 'series_versions',
            ['reroll_of_id'], ['id'], ondelete='SET NULL')
        batch_op.create_index(batch_op.f('ix_series_versions_reroll_of_id'), ['reroll_of_id'])


def downgrade() -> None:
    with op.batch_alter_table('series_versions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_series_versions_reroll_of_id'))
        batch_op.drop_constraint(
            batch_op.f('fk_series_versions_reroll_of_id_series_versions'), type_='foreignkey')
        batch_op.drop_column('reroll_of_id')
