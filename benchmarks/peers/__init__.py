"""memctl next to the tools a user would pick instead, on the same memories, queries and scorer.

Each peer runs in its own interpreter (its own venv, see benchmarks/README.md): the driver
exports the stores as one Markdown file per memory and the queries as JSON, runs the peer's
query script there, reads back the ranked files and scores them with project_tasks' metrics.
"""
