"""Where words came from and how far they are trusted: origins, directives, the fence around injected notes, terminal-safe text."""
