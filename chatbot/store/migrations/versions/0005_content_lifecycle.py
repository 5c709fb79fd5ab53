"""certified content lifecycle: documents, versions, the content generation; turns keep the versions they
linked; approvals can be suspended for re-review

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "content_documents",
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("language", sa.String(length=8), nullable=False),
        sa.Column("publisher", sa.String(length=200), nullable=False),
        sa.Column("source_url", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("current_version_id", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_content_documents")),
    )
    op.create_index(op.f("ix_content_documents_language"), "content_documents", ["language"])
    op.create_table(
        "content_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.String(length=200), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.Column("source_name", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("source_url", sa.Text(), nullable=False),
        sa.Column("language", sa.String(length=8), nullable=False),
        sa.Column("publisher", sa.String(length=200), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("imported_by", sa.String(length=80), nullable=False),
        sa.Column("imported_at", sa.DateTime(), nullable=False),
        sa.Column("certified_by_id", sa.Integer(), nullable=True),
        sa.Column("certified_by", sa.String(length=80), nullable=True),
        sa.Column("certified_at", sa.DateTime(), nullable=True),
        sa.Column("review_due", sa.Date(), nullable=True),
        sa.Column("withdrawn_at", sa.DateTime(), nullable=True),
        sa.Column("withdrawn_by", sa.String(length=80), nullable=True),
        sa.Column("withdraw_reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["content_documents.id"],
            name=op.f("fk_content_versions_document_id_content_documents"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["certified_by_id"],
            ["users.id"],
            name=op.f("fk_content_versions_certified_by_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_content_versions")),
        sa.UniqueConstraint("document_id", "number", name=op.f("uq_content_versions_document_id")),
    )
    op.create_index(op.f("ix_content_versions_document_id"), "content_versions", ["document_id"])
    op.create_index(op.f("ix_content_versions_content_hash"), "content_versions", ["content_hash"])
    op.create_index(op.f("ix_content_versions_status"), "content_versions", ["status"])
    op.create_index(op.f("ix_content_versions_review_due"), "content_versions", ["review_due"])
    op.create_table(
        "content_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_content_state")),
    )
    op.execute("INSERT INTO content_state (id, generation) VALUES (1, 0)")
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.add_column(sa.Column("content_versions", sa.JSON(), nullable=True))
    with op.batch_alter_table("approvals", schema=None) as batch_op:
        batch_op.add_column(sa.Column("suspended_at", sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column("suspended_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("approvals", schema=None) as batch_op:
        batch_op.drop_column("suspended_reason")
        batch_op.drop_column("suspended_at")
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.drop_column("content_versions")
    op.drop_table("content_state")
    op.drop_index(op.f("ix_content_versions_review_due"), table_name="content_versions")
    op.drop_index(op.f("ix_content_versions_status"), table_name="content_versions")
    op.drop_index(op.f("ix_content_versions_content_hash"), table_name="content_versions")
    op.drop_index(op.f("ix_content_versions_document_id"), table_name="content_versions")
    op.drop_table("content_versions")
    op.drop_index(op.f("ix_content_documents_language"), table_name="content_documents")
    op.drop_table("content_documents")
