"""approval revocation: who revoked a certified answer, when and why

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("approvals", schema=None) as batch_op:
        batch_op.add_column(sa.Column("revoked_at", sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column("revoked_by", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("revoke_comment", sa.Text(), nullable=True))
        batch_op.create_foreign_key(batch_op.f("fk_approvals_revoked_by_users"), "users", ["revoked_by"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("approvals", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_approvals_revoked_by_users"), type_="foreignkey")
        batch_op.drop_column("revoke_comment")
        batch_op.drop_column("revoked_by")
        batch_op.drop_column("revoked_at")
