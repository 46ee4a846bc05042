"""The demo channel that `make run` loads (definition, documents, attribution)."""
