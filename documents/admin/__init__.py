"""The Quire admin: channels, documents (upload, preview), sources and their
syncs, API keys, sign-in grants, feedback, the audit trail. The site itself
(name, landing page, list order) is project.admin's."""

from documents.admin import (  # noqa: F401
    audit,
    channels,
    documents,
    feedback,
    grants,
    keys,
    sources,
)
