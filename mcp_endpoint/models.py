"""The MCP endpoint keeps no tables of its own (the request counters moved to
documents.models with the rest of the access rules)."""
