"""Reflection: reading transcripts, mining them for candidates, routing each by confidence, and
writing the captures through the vault; cursors, the candidate ledger, and the review queue's actions.
"""
