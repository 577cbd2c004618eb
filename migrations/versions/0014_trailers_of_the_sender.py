"""trailers a reply gave in another person's name are removed

From this revision a person's trailer in a reply (Reviewed-by, Acked-by, Tested-by, ...) counts
for a patch only when it names the reply's sender (`bot.mail.trailer_sender`, b4's rule for
follow-up trailers). The rows stored before it under the old rule are removed here: those
given in a reply, in a reply to the cover letter, or carried from an earlier version, whose
reply was sent by someone else. Trailers from replies whose subject lacks "Re:", counted from
this revision too, are not added here: a version's trailers are rebuilt when its thread next
gets a patch or a review with trailers.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04 02:30:00.000000
"""

import sqlalchemy as sa
from alembic import op

from bot.mail.trailer_sender import given_by_sender

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None

_GIVEN = sa.text(
    'SELECT t.id, t.name, t.value, m.from_name, m.from_email FROM trailers AS t '
    'JOIN messages AS m ON m.msgid = t.source_msgid'
)
_REMOVE = sa.text('DELETE FROM trailers WHERE id IN :ids').bindparams(
    sa.bindparam('ids', expanding=True)
)
_CHUNK = 500


def upgrade() -> None:
    conn = op.get_bind()
    gone = [
        row.id for row in conn.execute(_GIVEN)
        if not given_by_sender(row.name, row.value, row.from_name or '', row.from_email or '')
    ]
    for start in range(0, len(gone), _CHUNK):
        conn.execute(_REMOVE, {'ids': gone[start:start + _CHUNK]})


def downgrade() -> None:
    pass  # the removed rows were never the senders' to give; nothing to put back
