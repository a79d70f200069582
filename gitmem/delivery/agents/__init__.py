"""Other agents' channels: Codex, GitHub Copilot, Cursor, Gemini CLI, AGENTS.md (see channels)."""

# Where the files generated for agents without hooks live (gitmem.delivery.agents.generated writes
# them; AGENTS.md's section asks what they already name, and may not import that module).
COPILOT_DIR = ".github/instructions"
CURSOR_DIR = ".cursor/rules"
GEMINI_FILE = "GEMINI.md"
