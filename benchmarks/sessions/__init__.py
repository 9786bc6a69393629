"""Learning from real sessions: verbatim Claude Code transcripts in, what memctl keeps scored.

`python -m benchmarks.sessions` feeds each recorded session to a fresh store through the SessionEnd
hook's use-case, scores what it wrote against items labelled by hand before any run, and replays
later sessions through the SessionStart / UserPromptSubmit / PreToolUse hooks to see whether what
an earlier session settled reached the agent before the user had to say it again.
See benchmarks/README.md.
"""
