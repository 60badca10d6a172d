"""The idea ledger: `Ideas.md` sections at the vault root and incubator notes, captured, promoted,
archived and deleted in single journalled writes.
"""
