"""The memory file: its record, front matter, YAML, ids, limits, history, merges, chunks and sync plan."""
