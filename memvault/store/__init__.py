"""The markdown on disk and every safe write to it: note parsing, the note model, atomic writes and
locks, the intent journal, the safety envelope, the secret scan, git commits. Imports only the ground floor.
"""
