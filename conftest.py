"""Project-wide test fixtures. Tests run on real PostgreSQL with pgvector."""
