"""Extensions a client declares (`capabilities.extensions`), read per request.

MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865): a client that can render
`text/html;profile=mcp-app` views says so with that MIME type in the
extension's `mimeTypes`. In 2026-07-28 every request carries the client's
capabilities in `params._meta`; in the handshake era they travel once, in
`initialize`, which a stateless server cannot remember, so there a request is
taken to declare the extension when it carries the same `_meta` key (and
`initialize` itself when its `capabilities` do).
"""

from typing import Any

from mcp_endpoint.protocol.eras import META_CLIENT_CAPABILITIES

UI_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
# Quire's one view: a cited page (mcp_endpoint.viewer).
PAGE_VIEWER_URI = "ui://quire/page-viewer"


def _declares_apps(capabilities: Any) -> bool:
    if not isinstance(capabilities, dict):
        return False
    extensions = capabilities.get("extensions")
    settings = extensions.get(UI_EXTENSION) if isinstance(extensions, dict) else None
    mime_types = settings.get("mimeTypes") if isinstance(settings, dict) else None
    return isinstance(mime_types, list) and APP_MIME_TYPE in mime_types


def declares_apps(method: str, params: dict, client_capabilities: dict) -> bool:
    """Whether this request comes from a client that renders MCP Apps.

    `client_capabilities` are the 2026-07-28 ladder's (empty in the handshake
    era)."""
    if _declares_apps(client_capabilities):
        return True
    if method == "initialize" and _declares_apps(params.get("capabilities")):
        return True
    meta = params.get("_meta")
    return isinstance(meta, dict) and _declares_apps(meta.get(META_CLIENT_CAPABILITIES))
