"""`memvault mcp`: the vault as a Model Context Protocol server for any agent host (stdio)."""
