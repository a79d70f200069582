"""gitmem: git-native memory for coding agents.

Importing this package must stay free: Claude Code hooks import submodules of it
in front of every tool call.
"""

__version__ = "0.1.0"
