"""One name per project, the same on every clone: its git remote, normalised; else its path.

`git@github.com:Org/Repo.git`, `https://user@github.com/org/repo` and `ssh://git@github.com/org/repo/`
all name `github.com/org/repo`. A memory written to the user store from a project records this
name (front matter `project:`) so that recall in another project leaves it out.
"""

from __future__ import annotations

import re

_SCP = re.compile(r"^(?:[\w.-]+@)?([\w.-]+):(?!//)(.+)$")  # git@host:owner/repo.git
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://(?:[^@/]+@)?([^/:]+)(?::\d+)?/(.+)$", re.IGNORECASE)


def normalise_remote(url: str) -> str:
    """host/owner/name in lower case, without scheme, user, port or `.git`."""
    text = url.strip()
    match = _URL.match(text) or _SCP.match(text)
    if match is None:
        return text.rstrip("/").removesuffix(".git").lower()
    host, path = match.group(1), match.group(2)
    path = path.strip("/").removesuffix(".git").strip("/")
    return f"{host}/{path}".lower()


def project_name(remote: str | None, root: str) -> str:
    return normalise_remote(remote) if remote else root
