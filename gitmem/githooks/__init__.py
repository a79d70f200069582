"""gitmem's git hooks: the stubs git runs and what they call (imported by the agent's hooks too:
standard library only)."""

HOOK_NAMES = ("pre-commit", "prepare-commit-msg", "post-commit", "post-merge", "post-rewrite", "post-checkout",
              "post-applypatch")
# What pre-commit staged and wrote, in the worktree's state folder: the pid of its `git commit` on
# the first line (the stub reads it without Python), then {"head", "files": {path: [[index blob,
# file blob] before, after]}}. That commit's post-commit empties it; found full by a later
# pre-commit, the commit never happened (an empty message, a failed signature, a commit-msg hook's
# refusal) and gitmem's changes are taken back where they are still as it left them.
STAGED_BY_PRE_COMMIT = "pre-commit-staged.json"
