"""The playground is a client of the MCP endpoint: its tests use the endpoint's
channels and keys."""

from mcp_endpoint.tests.conftest import (  # noqa: F401
    handbook,
    handbook_key,
    papers,
    papers_key,
)
