"""Every repository setting of `.gitmem/config.yaml`: its type, default and meaning, in one place.

The committed template `gitmem init` writes, the defaults the loader merges under the file, and
the defaults the hook's compiled rules fall back to all come from SETTINGS. Standard library
only: the hook path reads the defaults.
"""

from __future__ import annotations

TYPE_CHECKING = False  # no typing import on the hook path
if TYPE_CHECKING:
    from typing import Any

# The agents a repository can serve (`gitmem init --agent NAME`): each gets its own channel.
AGENT_NAMES = ("claude-code", "codex", "copilot", "cursor", "gemini", "agents-md")

# (dotted key, type, default, what it means). `None` as type: a path string or null; `list`: a
# list of AGENT_NAMES.
SETTINGS: tuple[tuple[str, type | None, object, str], ...] = (
    ("agents", list, ["claude-code"], "agents served: " + ", ".join(AGENT_NAMES)),
    ("delivery.session_start.max_entries", int, 8, "repository-wide entries injected at session start"),
    ("delivery.session_start.max_chars", int, 2000, "and their total size"),
    ("delivery.retraction_days", int, 14, "how long a retired entry is announced as withdrawn"),
    ("writer.model", None, None, "path to a GGUF file; null = the embedded Gemma 3 270M"),
    ("writer.idle_timeout", int, 600, "seconds the writer daemon stays resident without work"),
)

HEADER = "# gitmem repository settings (committed). Machine-local state lives in .git/gitmem/.\n"


def default(key: str) -> Any:
    """The default of one dotted key."""
    for name, _, value, _ in SETTINGS:
        if name == key:
            return value
    raise KeyError(key)


def defaults() -> dict[str, Any]:
    """All defaults as the nested mapping the YAML file holds."""
    out: dict[str, Any] = {}
    for name, _, value, _ in SETTINGS:
        *parents, leaf = name.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = list(value) if isinstance(value, list) else value  # a copy: callers may change it
    return out


def template() -> str:
    """The commented config.yaml that `gitmem init` writes."""
    lines = [HEADER.rstrip("\n")]
    opened: list[str] = []
    for name, _, value, meaning in SETTINGS:
        *parents, leaf = name.split(".")
        common = 0
        while common < min(len(opened), len(parents)) and opened[common] == parents[common]:
            common += 1
        for depth in range(common, len(parents)):
            lines.append("  " * depth + parents[depth] + ":")
        opened = parents
        text = ("null" if value is None else str(value).lower() if isinstance(value, bool)
                else "[" + ", ".join(map(str, value)) + "]" if isinstance(value, list) else str(value))
        entry = "  " * len(parents) + f"{leaf}: {text}"
        lines.append(f"{entry:<24}# {meaning}")
    return "\n".join(lines) + "\n"


def problems(data: object) -> list[str]:
    """What is wrong with a loaded config mapping: wrong types, values out of range, unknown keys."""
    if data is None:
        return []
    if not isinstance(data, dict):
        return ["the file must hold a mapping of settings"]
    known = {name: kind for name, kind, _, _ in SETTINGS}
    prefixes = {".".join(name.split(".")[:i]) for name in known for i in range(1, name.count(".") + 1)}
    out: list[str] = []

    def walk(node: dict[Any, Any], prefix: str) -> None:
        for key, value in node.items():
            name = f"{prefix}{key}"
            if name in prefixes:
                if value is None:
                    continue
                if not isinstance(value, dict):
                    out.append(f"{name}: must be a mapping, not {type(value).__name__}")
                    continue
                walk(value, name + ".")
            elif name in known:
                kind = known[name]
                if kind is None:
                    if value is not None and not isinstance(value, str):
                        out.append(f"{name}: must be a path or null, not {type(value).__name__}")
                elif kind is int and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
                    out.append(f"{name}: must be a positive whole number, not {value!r}")
                elif kind is list:
                    unknown = [v for v in value if v not in AGENT_NAMES] if isinstance(value, list) else None
                    if unknown is None:
                        out.append(f"{name}: must be a list of agent names, not {type(value).__name__}")
                    elif unknown:
                        out.append(f"{name}: unknown agent {unknown[0]!r}; expected some of {', '.join(AGENT_NAMES)}")
            else:
                out.append(f"{name}: unknown setting")

    walk(data, "")
    return out
