"""Write the mean e5 vector that memctl subtracts from every multilingual-e5-small vector.

python -m benchmarks.e5_mean --chinese DIR_OR_FILE... --english FILE... [--out PATH]

e5's cosines are compressed: any two texts score 0.8-0.92, because every vector shares one
large common direction. Subtracting it (the mean of many unrelated sentences, half Chinese,
half English, equally weighted so the mix of a store does not matter) and renormalising spreads
them like MiniLM's (unrelated pairs ~0.1-0.5), so one set of write and recall thresholds fits,
while the order of memories within one language is kept (benchmarks.multilingual_models).
The shipped vector was made from the Chinese design articles the project grew from and the
English sentences of README.md (150 and 116 sentences), not from the benchmark set.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

from memctl.config import EmbeddingSettings

OUT = Path(__file__).parent.parent / "memctl" / "data" / "e5" / "mean.json"
PER_LANGUAGE = 150
_HAN = re.compile(r"[\u4e00-\u9fff]")
_ENGLISH = re.compile(r"[A-Za-z][A-Za-z ,.;:'()\-]+[.!?]?")


def chinese_sentences(paths: list[Path]) -> list[str]:
    files = [f for p in paths for f in (sorted(p.glob("*.txt")) if p.is_dir() else [p])]
    found = []
    for file in files:
        for sentence in re.split(r"[。！？\n]", file.read_text(encoding="utf-8")):
            sentence = sentence.strip()
            if 12 <= len(sentence) <= 80 and len(_HAN.findall(sentence)) >= 0.6 * len(sentence):
                found.append(sentence)
    return found


def english_sentences(paths: list[Path]) -> list[str]:
    found = []
    for file in paths:
        for sentence in re.split(r"(?<=[.!?])\s+|\n", file.read_text(encoding="utf-8")):
            sentence = sentence.strip()
            if 40 <= len(sentence) <= 200 and _ENGLISH.fullmatch(sentence):
                found.append(sentence)
    return found


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from memctl.integrations.embedder import E5Embedder

    parser = argparse.ArgumentParser(prog="python -m benchmarks.e5_mean", description=__doc__)
    parser.add_argument("--chinese", type=Path, nargs="+", required=True)
    parser.add_argument("--english", type=Path, nargs="+", required=True)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    rng = random.Random(0)
    chinese = chinese_sentences(args.chinese)
    english = english_sentences(args.english)
    chinese = rng.sample(chinese, min(PER_LANGUAGE, len(chinese)))
    english = rng.sample(english, min(PER_LANGUAGE, len(english)))
    raw = E5Embedder(EmbeddingSettings(model="multilingual-e5-small-q4"), centred=False)
    mean = (raw.embed(chinese).mean(axis=0) + raw.embed(english).mean(axis=0)) / 2
    report = {
        "model": "multilingual-e5-small-q4",
        "sentences": {"chinese": len(chinese), "english": len(english)},
        "mean": [round(float(x), 6) for x in np.asarray(mean, dtype=np.float32)],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report) + "\n", encoding="utf-8")
    print(f"wrote {args.out} from {len(chinese)} Chinese and {len(english)} English sentences")
    return 0


if __name__ == "__main__":
    sys.exit(main())
