"""versions linked by title and change-id, looked up by index

Assembly groups versions into series by what links them (bot/series/membership.py): one
author's versions of one title, and versions of one b4 change-id. `series_versions.title_key`
is the version's title normalised as `series.title_key` is; (author_email, title_key) and
change_id are indexed, so that a batch finds the versions its own are linked to without reading
every version its authors ever sent. The author's index alone is covered by the new one.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 12:30:00.000000
"""

import re

import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None

# bot.series.records.title_key as of this revision: a migration does not follow later code.
_NOT_WORD = re.compile(r"[^a-z0-9]+")


def _title_key(title: str) -> str:
    return _NOT_WORD.sub(" ", title.lower()).strip()[:500]


def upgrade() -> None:
    with op.batch_alter_table('series_versions') as batch:
        batch.add_column(sa.Column('title_key', sa.String(length=500), nullable=False,
                                   server_default=''))
    versions = sa.table('series_versions', sa.column('id', sa.Integer),
                        sa.column('title', sa.Text), sa.column('title_key', sa.String))
    conn = op.get_bind()
    rows = [{'version_id': id_, 'key': _title_key(title or '')}
            for id_, title in conn.execute(sa.select(versions.c.id, versions.c.title))]
    if rows:
        conn.execute(versions.update().where(versions.c.id == sa.bindparam('version_id'))
                     .values(title_key=sa.bindparam('key')), rows)
    with op.batch_alter_table('series_versions') as batch:
        batch.drop_index('ix_series_versions_author_email')
        batch.create_index('ix_series_versions_author_title', ['author_email', 'title_key'])
        batch.create_index('ix_series_versions_change_id', ['change_id'])


def downgrade() -> None:
    with op.batch_alter_table('series_versions') as batch:
        batch.drop_index('ix_series_versions_change_id')
        batch.drop_index('ix_series_versions_author_title')
        batch.create_index('ix_series_versions_author_email', ['author_email'])
        batch.drop_column('title_key')
