#!/bin/sh
# gitmem: managed hook stub. Installed by `gitmem init`; `gitmem uninstall` puts back what was here.
# It first runs the hook that was here before gitmem (its exit status is kept), then gitmem's
# anchor re-check, which never blocks a commit.
GITMEM_HOOK=@HOOK@
GITMEM_PYTHON=@PYTHON@
GITMEM_ORIG_MODE=@ORIG_MODE@
orig="$(dirname "$0")/$GITMEM_HOOK.gitmem-orig"

input=""
[ "$GITMEM_HOOK" = post-rewrite ] && input=$(cat)  # stdin is read once and handed to both

status=0
if [ -e "$orig" ]; then
  if [ "$GITMEM_ORIG_MODE" = source ]; then
    # Shims such as husky's find their script from $0, so run it with this stub's $0.
    printf '%s\n' "$input" | GITMEM_ORIG="$orig" sh -c '. "$GITMEM_ORIG"' "$0" "$@"
  else
    printf '%s\n' "$input" | "$orig" "$@"
  fi
  status=$?
  [ "$GITMEM_HOOK" = pre-commit ] && [ $status -ne 0 ] && exit $status
fi

if [ ! -x "$GITMEM_PYTHON" ]; then
  echo "gitmem: $GITMEM_PYTHON is gone; run 'gitmem init' again to repair this hook" >&2
  exit $status
fi

state=.git/gitmem
[ -d .git ] || state="$(git rev-parse --git-common-dir 2>/dev/null)/gitmem"
# post-commit has work only after a partial commit in which pre-commit staged entry changes.
[ "$GITMEM_HOOK" = post-commit ] && [ ! -f "$state/partial-commit.json" ] && exit $status

if [ "$GITMEM_HOOK" = pre-commit ]; then
  # Fast path in shell, no extra processes but one git call: Python starts only if the commit
  # touches a file an entry is anchored to (or the entries changed since that list was written).
  anchored="$state/anchored-paths.sh"
  if [ -f "$anchored" ] && [ ! .gitmem/entries -nt "$anchored" ]; then
    . "$anchored"  # sets the positional parameters to the anchored paths, quoted for sh
    [ $# -eq 0 ] && exit 0
    git diff-index --cached --quiet HEAD -- "$@" 2>/dev/null && exit 0
  fi
fi

printf '%s\n' "$input" | "$GITMEM_PYTHON" -I -m gitmem.githooks.on_commit "$GITMEM_HOOK" "$@"
exit $status
