"""Other agents' channels: Codex, GitHub Copilot, Cursor, Gemini CLI, AGENTS.md (see channels)."""
