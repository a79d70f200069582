"""gitmem's git hooks: the stubs git runs and what they call (imported by the agent's hooks too:
standard library only)."""

HOOK_NAMES = ("pre-commit", "prepare-commit-msg", "post-commit", "post-merge", "post-rewrite", "post-checkout",
              "post-applypatch")
