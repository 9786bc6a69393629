"""What a session leaves behind: extraction, episodes, summaries, consolidation, revisions, supersession, decay and routing."""
