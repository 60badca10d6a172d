"""The `Vault` facade: one object that ties the store, the index and recall together (open, read,
list, save, evolve, update, move, remove, transact, undo, reindex, recall).
"""

from .core import Entry, NoteFile, Vault, WriteResult, open_vault

__all__ = ["Entry", "NoteFile", "Vault", "WriteResult", "open_vault"]
