"""Count tokens with tiktoken's cl100k_base, loaded only from a file already on disk.

tiktoken downloads its encodings on first use. memctl never lets it: the encoding file is
looked up in TIKTOKEN_CACHE_DIR and in the copy litellm bundles, checked against its known
hash, and only then loaded. Without one, counts fall back to a character estimate.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

from memctl.config import tiktoken_cache_dirs
from memctl.core.language.tokens import estimate_tokens

ENCODING = "cl100k_base"
_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CACHE_KEY = hashlib.sha1(_URL.encode()).hexdigest()  # how tiktoken names its cached copy
_ENV_LOCK = threading.Lock()


def _candidate_dirs() -> list[Path]:
    dirs = tiktoken_cache_dirs()
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    for location in (spec.submodule_search_locations or []) if spec else []:
        dirs.append(Path(location) / "litellm_core_utils" / "tokenizers")
    dirs.append(Path(tempfile.gettempdir()) / "data-gym-cache")
    return dirs


def _verified_dir() -> Path | None:
    for folder in _candidate_dirs():
        path = folder / _CACHE_KEY
        try:
            if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == _SHA256:
                return folder
        except OSError:
            continue
    return None


@lru_cache(maxsize=1)
def _encoding():
    """The cl100k_base encoding, or None when tiktoken or a verified local file is missing."""
    if importlib.util.find_spec("tiktoken") is None:
        return None
    folder = _verified_dir()
    if folder is None:
        return None
    import tiktoken

    # Why: tiktoken reads its cache folder from the environment (nothing else tells it); point
    # it at the verified copy just for this load, so the file is found and nothing is fetched.
    with _ENV_LOCK:
        saved = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
        try:
            return tiktoken.get_encoding(ENCODING)
        except Exception:  # noqa: BLE001 - any failure means: estimate instead
            return None
        finally:
            if saved is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = saved


def tokenizer_name() -> str:
    return ENCODING if _encoding() is not None else "estimate"


def count_tokens(text: str) -> int:
    if not text:
        return 0
    encoding = _encoding()
    if encoding is None:
        return estimate_tokens(text)
    return len(encoding.encode(text, disallowed_special=()))
