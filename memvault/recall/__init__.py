"""Finding notes for a query: hybrid search and score fusion over the index, the warm embedding
service and its stdlib-only client, the service's in-memory vectors, and recall analytics.
"""
