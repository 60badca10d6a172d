"""Team memory: team and org entries shared through PostgreSQL with pgvector, mirrored into the vault."""
