"""The Quire admin: channels, documents (upload, preview), API keys, feedback,
the audit trail."""

from documents.admin import (  # noqa: F401
    audit,
    channels,
    documents,
    feedback,
    grants,
    keys,
)
