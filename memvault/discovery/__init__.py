"""Discovery: skills worth adopting found for the user (adapt, never import), and ideas researched."""
