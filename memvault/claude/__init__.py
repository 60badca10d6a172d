"""Everything about the host, Claude Code: its settings (hook entries merged and removed), install
and uninstall, the plugin route's first run, the skill file, the skills index and Claude Code's auto memory.
"""
