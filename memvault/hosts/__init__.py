"""Agent hosts besides Claude Code: Codex CLI and Gemini CLI hooks, and MCP registration for any client."""
