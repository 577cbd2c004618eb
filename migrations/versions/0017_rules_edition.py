"""the edition of the rules for reading mail that the stored rows were made with

An upgrade that reads or groups mail otherwise changes nothing stored until `lorelab ingest
reparse` reads it again (bot.ingest.rules_edition). A store that holds mail now records edition
0, "older than the recording of editions", so that lorelab says to run the reparse; an empty
one records nothing until its first mail.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04 11:30:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'rules_edition',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('edition', sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_rules_edition'),
    )
    op.execute("INSERT INTO rules_edition (id, edition) "
               "SELECT 1, 0 WHERE EXISTS (SELECT 1 FROM messages)")


def downgrade() -> None:
    op.drop_table('rules_edition')
