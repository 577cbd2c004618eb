"""ingest at list scale: skipped archive objects, the indexes the hot queries need (and none
that no query uses), and series dated by their newest mail

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 17:20:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

# Indexes no query used; each one made every message insert dearer as the archive grew.
UNUSED_MESSAGE_INDEXES = ('in_reply_to', 'from_email', 'change_id', 'patch_fingerprint')


def upgrade() -> None:
    op.create_table('ingest_skips',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('source', sa.Text(), nullable=False),
    sa.Column('epoch', sa.Integer(), nullable=True),
    sa.Column('commit', sa.String(length=64), nullable=False),
    sa.Column('object', sa.String(length=64), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('detected_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_ingest_skips')),
    sa.UniqueConstraint('source', 'commit', name=op.f('uq_ingest_skips_source'))
    )
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.create_index('ix_messages_thread_id_kind', ['thread_id', 'kind'], unique=False)
        batch_op.drop_index('ix_messages_thread_id')
        batch_op.drop_index('ix_messages_kind')
        for column in UNUSED_MESSAGE_INDEXES:
            batch_op.drop_index(f'ix_messages_{column}')
    with op.batch_alter_table('series_versions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_series_versions_cover_message_id'),
                              ['cover_message_id'], unique=False)
    with op.batch_alter_table('series', schema=None) as batch_op:
        batch_op.add_column(sa.Column('last_mail_at', sa.DateTime(timezone=True), nullable=True))
    # The newest cover letter or patch of each series; the row's own time where none is dated.
    op.execute("""
        UPDATE series SET last_mail_at = COALESCE((
            SELECT max(newest.date) FROM (
                SELECT m.date FROM series_versions v
                JOIN patches p ON p.series_version_id = v.id
                JOIN messages m ON m.id = p.message_id
                WHERE v.series_id = series.id
                UNION ALL
                SELECT m.date FROM series_versions v
                JOIN messages m ON m.id = v.cover_message_id
                WHERE v.series_id = series.id
            ) AS newest
        ), updated_at)
    """)
    with op.batch_alter_table('series', schema=None) as batch_op:
        batch_op.create_index('ix_series_last_mail_at_id', ['last_mail_at', 'id'], unique=False)
    op.execute("ANALYZE")


def downgrade() -> None:
    with op.batch_alter_table('series', schema=None) as batch_op:
        batch_op.drop_index('ix_series_last_mail_at_id')
        batch_op.drop_column('last_mail_at')
    with op.batch_alter_table('series_versions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_series_versions_cover_message_id'))
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.create_index('ix_messages_kind', ['kind'], unique=False)
        batch_op.create_index('ix_messages_thread_id', ['thread_id'], unique=False)
        for column in UNUSED_MESSAGE_INDEXES:
            batch_op.create_index(f'ix_messages_{column}', [column], unique=False)
        batch_op.drop_index('ix_messages_thread_id_kind')
    op.drop_table('ingest_skips')
