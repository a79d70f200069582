#!/bin/sh
# gitmem: managed hook stub. Installed by `gitmem init`; `gitmem uninstall` puts back what was here.
# It first runs the hook that was here before gitmem (its exit status is kept), then gitmem's
# anchor re-check, which never blocks a commit.
GITMEM_HOOK=@HOOK@
GITMEM_PYTHON=@PYTHON@
GITMEM_ORIG_MODE=@ORIG_MODE@
GITMEM_SHADOW=@SHADOW@
GITMEM_ROOT=@ROOT@
case "$0" in  # the hooks folder, without forking dirname (this runs in every commit)
  */*) orig="${0%/*}/$GITMEM_HOOK.gitmem-orig"; named="${0%/*}/$GITMEM_SHADOW/$GITMEM_HOOK" ;;
  *) orig="./$GITMEM_HOOK.gitmem-orig"; named="./$GITMEM_SHADOW/$GITMEM_HOOK" ;;
esac

# The git command running this hook: its parent, or, run by the pre-commit framework from its
# legacy slot, the framework's parent (its hook script exec's the framework from git's hook).
git_pid=$PPID
[ -n "$PRE_COMMIT_RUNNING_LEGACY" ] && git_pid=$(ps -o ppid= -p "$PPID" 2>/dev/null) && git_pid=${git_pid##* }
[ -n "$git_pid" ] || git_pid=$PPID

# This worktree's own state (a linked worktree has its own git dir, index and entries).
state=.git/gitmem
[ -d .git ] || state="$(git rev-parse --git-dir 2>/dev/null)/gitmem"
# A commit is being made: gitmem's writers keep their entries pending until post-commit, so they
# never move the branch under a `git commit` that waits for its editor. prepare-commit-msg runs
# before the editor even under `git commit --no-verify`, which skips pre-commit.
{ [ "$GITMEM_HOOK" = pre-commit ] || [ "$GITMEM_HOOK" = prepare-commit-msg ]; } && [ -d "$state" ] && \
  { echo "$git_pid" > "$state/committing"; } 2>/dev/null
case "$GITMEM_HOOK" in  # the commit (or the merge's, the rebase's) is made
  post-commit|post-merge|post-rewrite) [ -s "$state/committing" ] && { : > "$state/committing"; } 2>/dev/null
    # what this commit's own pre-commit staged is committed (another's, a commit that failed before
    # a --no-verify one, is not: the next pre-commit sees it)
    if [ -s "$state/pre-commit-staged.json" ]; then
      owner=; { IFS= read -r owner < "$state/pre-commit-staged.json"; } 2>/dev/null
      [ "$owner" = "$git_pid" ] && { : > "$state/pre-commit-staged.json"; } 2>/dev/null
    fi ;;
esac

# What gitmem's background retry had to say (it has no terminal): shown once, before a commit.
[ "$GITMEM_HOOK" = pre-commit ] && [ -s "$state/warnings" ] && cat "$state/warnings" >&2 && : > "$state/warnings"

input=""
[ "$GITMEM_HOOK" = post-rewrite ] && input=$(cat)  # stdin is read once and handed to both

status=0
# Run by the pre-commit framework as its legacy hook, an original that is the framework's own
# script (chained by an earlier layout, until `gitmem init`) would run the framework inside
# itself, which refuses the commit.
[ -n "$PRE_COMMIT_RUNNING_LEGACY" ] && [ -f "$orig" ] && grep -qs hook-impl "$orig" && orig=
if [ -f "$orig" ] && [ -x "$orig" ]; then  # git runs a hook only when it is executable; so does this stub
  if [ "$GITMEM_ORIG_MODE" = source ]; then
    # Shims such as husky's find their script from $0, so run it with this stub's $0.
    printf '%s\n' "$input" | GITMEM_ORIG="$orig" sh -c '. "$GITMEM_ORIG"' "$0" "$@"
  else
    # under its hook's name, in a folder mirroring this one, where it dispatches on its name
    [ "$GITMEM_ORIG_MODE" = named ] && [ -x "$named" ] || named=$orig
    printf '%s\n' "$input" | "$named" "$@"
  fi
  status=$?
  [ "$GITMEM_HOOK" = pre-commit ] && [ $status -ne 0 ] && exit $status
fi
[ "$GITMEM_HOOK" = prepare-commit-msg ] && exit $status  # only the marker above: nothing to re-check

if [ ! -x "$GITMEM_PYTHON" ]; then
  echo "gitmem: $GITMEM_PYTHON is gone; run 'gitmem init' again to repair this hook" >&2
  exit $status
fi
found=  # gitmem uninstalled from that environment, its interpreter kept: a line, not a traceback
old_ifs=$IFS; IFS=:
for root in $GITMEM_ROOT; do [ -f "$root/gitmem/__init__.py" ] && { found=1; break; }; done
IFS=$old_ifs
if [ -z "$found" ]; then
  echo "gitmem: $GITMEM_PYTHON no longer has gitmem; run 'gitmem init' again to repair this hook" >&2
  exit $status
fi

if [ "$GITMEM_HOOK" = post-commit ] || [ "$GITMEM_HOOK" = post-checkout ]; then
  # Work only after a partial commit in which pre-commit staged entry changes, when entries wait
  # pending for a safe moment (this is one), when a commit changed the entries (one written by
  # hand: pre-commit left the entries-committed marker), after a commit that concludes one pick of a series
  # (pre-commit left it to this hook: in-series.json), after a cherry-pick or revert (git runs no pre-commit for them and leaves MERGE_MSG
  # while post-commit runs; a plain commit removes it first: their anchors are re-checked here),
  # or when a checkout changed the entries, a branch switch or `git checkout REV -- .gitmem/entries`
  # (same HEAD: the work tree then differs from it); the gate judges what came in; or when a
  # rebase checks out its base with nothing to replay (a fast-forward, every commit dropped: no
  # post-rewrite follows). Otherwise exit in shell, without Python.
  for waiting in "$state"/pending/*.json; do break; done
  if [ ! -e "$waiting" ] && { [ "$GITMEM_HOOK" = post-checkout ] || [ ! -f "$state/partial-commit.json" ]; } && \
     { { [ "$GITMEM_HOOK" = post-commit ] && { [ ! -f "${state%/gitmem}/MERGE_MSG" ] || [ -d "${state%/gitmem}/rebase-merge" ]; } && \
         [ ! -f "$state/entries-committed" ] && [ ! -f "$state/in-series.json" ]; } || \
       { [ "$GITMEM_HOOK" = post-checkout ] && \
         { [ ! -f "${state%/gitmem}/rebase-merge/git-rebase-todo" ] || [ -s "${state%/gitmem}/rebase-merge/git-rebase-todo" ]; } && \
         { { [ "$1" = "$2" ] && git diff --quiet HEAD -- .gitmem/entries 2>/dev/null; } || \
           { [ "$1" != "$2" ] && git diff --quiet "$1" "$2" -- .gitmem/entries 2>/dev/null; }; }; }; }; then
    exit $status
  fi
fi

# `git rebase --apply` runs post-applypatch too: its post-rewrite re-checks the rebase.
[ "$GITMEM_HOOK" = post-applypatch ] && [ -f "${state%/gitmem}/rebase-apply/rebasing" ] && exit $status

if [ "$GITMEM_HOOK" = pre-commit ] || [ "$GITMEM_HOOK" = post-applypatch ]; then
  # Fast path in shell, no extra processes but one git call: Python starts only if the commit
  # (pre-commit: the staged change; post-applypatch: the patch `git am` just committed) touches a
  # file an entry is anchored to (or the entries changed since that list was written; after a
  # patch, also when the patch changed the entries or a re-check waits pending, as it does between
  # the patches of a series). The list is stale when the folder changed (an entry added, removed,
  # renamed) or when any entry file was rewritten in place (an editor's save changes the file's
  # mtime, not the folder's): `test -nt` is a builtin, so this is a few stats and no process.
  anchored="$state/anchored-paths.sh"
  fresh=
  # A commit whose pre-commit changed entries was never made: Python takes those changes back. A
  # gitmem commit whose work tree was never written (its transaction left): Python keeps its entries.
  if [ ! -s "$state/pre-commit-staged.json" ] && [ ! -e "$state/transaction.json" ] && [ -f "$anchored" ] && \
     [ ! .gitmem/entries -nt "$anchored" ]; then
    fresh=1
    for entry in .gitmem/entries/*.yaml; do
      [ "$entry" -nt "$anchored" ] && { fresh=; break; }
    done
    # One line, whole only when it ends with its mark: a crash can leave it cut short or empty, and
    # a cut one sourced here would stop every commit with a syntax error (read and case are builtins).
    paths=
    [ -n "$fresh" ] && { IFS= read -r paths < "$anchored" || paths=; }
    case $paths in *" # gitmem:end") ;; *) fresh= ;; esac
  fi
  if [ "$GITMEM_HOOK" = pre-commit ]; then
    if [ -n "$fresh" ]; then
      eval "$paths"  # sets the positional parameters to the anchored paths, quoted for sh
      git diff-index --cached --quiet HEAD -- .gitmem/entries "$@" 2>/dev/null && exit 0  # most commits: one question
    fi
    # Entry files are staged (written by hand, say): post-commit has the store's gate judge them.
    # A cherry-pick concluded by this commit (it stopped on a conflict) copied them from the commit
    # git names here only: the marker keeps it, for post-commit to re-check them from there.
    if ! git diff-index --cached --quiet HEAD -- .gitmem/entries 2>/dev/null; then
      picked=
      [ -f "${state%/gitmem}/CHERRY_PICK_HEAD" ] && read -r picked < "${state%/gitmem}/CHERRY_PICK_HEAD"
      { printf '%s' "$picked" > "$state/entries-committed"; } 2>/dev/null
      # An entry file the commit adds (a squash merge, a file checked out of another branch) is
      # checked against the code it lands on, and one it changes (a retirement staged again after
      # a reset, while the code kept the declaration), whatever else is staged: no shortcut.
      git diff-index --cached --quiet --diff-filter=AM HEAD -- .gitmem/entries 2>/dev/null || fresh=
    fi
    if [ -n "$fresh" ]; then
      [ $# -eq 0 ] && exit 0
      git diff-index --cached --quiet HEAD -- "$@" 2>/dev/null && exit 0
    fi
  elif [ -n "$fresh" ]; then
    for waiting in "$state"/pending/*.json; do break; done
    if [ ! -e "$waiting" ]; then
      eval "$paths"  # -r: without it a folder of an anchored path (src/) matches when anything in it changed
      git diff-tree -r --no-commit-id --quiet HEAD -- .gitmem/entries "$@" 2>/dev/null && exit $status
    fi
  fi
fi

if [ "$GITMEM_HOOK" = pre-commit ]; then
  # A commit that touches an anchored file but none of its anchors is answered without tree-sitter.
  "$GITMEM_PYTHON" -I -S -c 'import os, sys; sys.path[:0] = sys.argv.pop(1).split(os.pathsep)
from gitmem.githooks.fastcheck import main
sys.exit(main())' "$GITMEM_ROOT" "$@"
else
  printf '%s\n' "$input" | "$GITMEM_PYTHON" -I -m gitmem.githooks.on_commit "$GITMEM_HOOK" "$@"
fi
exit $status
