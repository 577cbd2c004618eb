"""ids named by stored mail but not stored, with their threads

A thread is what the threading headers connect, whatever the order of arrival
(bot/series/threads.py): a message joins the threads of the messages it names and of those that
named it before it came. `unseen_messages` keeps each Message-ID that stored mail names
(In-Reply-To, References) but no stored message has, with the thread of the mail that names
it. Filled here from the stored messages and from the threads' roots (a root that is no stored
message is the first id its thread's first mail named); an id named from two threads takes the
lower thread's id. Threads that were split before this revision stay as they are until a
message that connects them arrives.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 15:20:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

# The ids each stored message names, with its thread: JSON arrays are read by each database's
# own function (`references` is JSON text on SQLite, json on PostgreSQL).
_NAMED = {
    'sqlite': 'SELECT j.value AS msgid, m.thread_id FROM messages AS m, '
              'json_each(m."references") AS j WHERE m.thread_id IS NOT NULL',
    'postgresql': 'SELECT j.value AS msgid, m.thread_id FROM messages AS m '
                  'CROSS JOIN LATERAL json_array_elements_text(m."references") AS j(value) '
                  'WHERE m.thread_id IS NOT NULL',
}
_FILL = """
INSERT INTO unseen_messages (msgid, thread_id)
SELECT named.msgid, MIN(named.thread_id) FROM (
    {named}
    UNION ALL
    SELECT in_reply_to, thread_id FROM messages
    WHERE in_reply_to IS NOT NULL AND thread_id IS NOT NULL
    UNION ALL
    SELECT root_msgid, id FROM threads
) AS named
WHERE NOT EXISTS (SELECT 1 FROM messages AS stored WHERE stored.msgid = named.msgid)
GROUP BY named.msgid
"""


def upgrade() -> None:
    op.create_table(
        'unseen_messages',
        sa.Column('msgid', sa.String(length=998), nullable=False),
        sa.Column('thread_id', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['thread_id'], ['threads.id'],
                                name='fk_unseen_messages_thread_id_threads'),
        sa.PrimaryKeyConstraint('msgid', name='pk_unseen_messages'),
    )
    op.create_index('ix_unseen_messages_thread_id', 'unseen_messages', ['thread_id'])
    conn = op.get_bind()
    conn.execute(sa.text(_FILL.format(named=_NAMED[conn.dialect.name])))


def downgrade() -> None:
    op.drop_index('ix_unseen_messages_thread_id', table_name='unseen_messages')
    op.drop_table('unseen_messages')
