"""The derived search index: SQLite with FTS5 and sqlite-vec, its schema and migrations, chunking,
sync from the notes, embeddings, and the catalog of indexed notes. Rebuildable from the markdown at any time.
"""
