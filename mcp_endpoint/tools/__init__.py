"""Quire's MCP tools; importing this package registers them."""

from mcp_endpoint.tools import documents, feedback, search  # noqa: F401
