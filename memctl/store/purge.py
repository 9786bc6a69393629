"""Forget means gone: remove rows from a LanceDB table so that no file under it still holds them.

A Lance `delete` only marks rows in a deletion vector (`_deletions/`); the text stays in the
data file, and older versions keep referencing it. Purging therefore rewrites every fragment
that has deletions (compaction with deletions materialized), rebuilds the indices from the
live rows, and then removes every older version's files. The caller must hold the index write
lock and reopen its table handles afterwards: readers of older versions break.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Literal

DATA_DIRNAME = "data"
INDICES_DIRNAME = "_indices"


def purge_rows(db_dir: Path, table_name: str, ids: list[str], id_column: str = "id") -> None:
    """Delete these rows and leave no physical copy of them (nor of rows deleted earlier).

    A table left without rows is dropped altogether: an empty table's indices would keep
    the terms of everything it ever held.
    """
    import lance

    table_dir = Path(db_dir) / f"{table_name}.lance"
    if not table_dir.is_dir():
        return
    uri = str(table_dir)
    wanted = sorted(set(ids))
    if wanted:
        lance.dataset(uri).delete(_in_predicate(id_column, wanted))
    if lance.dataset(uri).count_rows() == 0:
        shutil.rmtree(table_dir)  # what lancedb's drop_table does for a local table
        return
    # Threshold 0: rewrite every fragment with a deleted row, also rows deleted by earlier edits.
    lance.dataset(uri).optimize.compact_files(
        materialize_deletions=True, materialize_deletions_threshold=0.0
    )
    _rebuild_indices(uri)
    # Open afresh: a handle on an older version would keep that version alive.
    lance.dataset(uri).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)


# describe_indices() names -> create_scalar_index() names
ScalarIndexType = Literal[
    "BTREE", "BITMAP", "LABEL_LIST", "INVERTED", "NGRAM", "ZONEMAP", "BLOOMFILTER"
]
_SCALAR_INDEX_TYPES: dict[str, ScalarIndexType] = {
    "BTree": "BTREE",
    "Bitmap": "BITMAP",
    "LabelList": "LABEL_LIST",
    "Inverted": "INVERTED",
    "NGram": "NGRAM",
    "ZoneMap": "ZONEMAP",
    "BloomFilter": "BLOOMFILTER",
}


def _rebuild_indices(uri: str) -> None:
    """Rebuild every index from the live rows, keeping its name and settings.

    Compaction remaps indices only for the fragments it rewrites. A fragment whose rows were
    all deleted simply vanishes, and the indices keep its entries: full-text terms, scalar
    values, vector codes.
    """
    import lance

    for desc in lance.dataset(uri).describe_indices():
        dataset = lance.dataset(uri)
        kind = _SCALAR_INDEX_TYPES.get(desc.index_type)
        if kind is None:  # vector indices: retrain on the current rows, same parameters
            dataset.optimize.optimize_indices(retrain=True, index_names=[desc.name])
            continue
        params = _inverted_params(desc.details) if kind == "INVERTED" else {}
        dataset.create_scalar_index(
            desc.field_names[0], kind, name=desc.name, replace=True, **params
        )


def _inverted_params(details: dict | None) -> dict:
    """The tokenizer settings an existing full-text index was built with."""
    from lance.query import DocumentGranularity

    params = {key: value for key, value in (details or {}).items() if value is not None}
    if "document_granularity" in params:
        params["document_granularity"] = DocumentGranularity(params["document_granularity"])
    return params


def raw_texts(table_dir: Path) -> Iterator[str]:
    """Every string in the table's data files, deleted rows included (deletion vectors ignored)."""
    for path in sorted((Path(table_dir) / DATA_DIRNAME).glob("*.lance")):
        yield from _file_strings(path)


def index_terms(table_dir: Path) -> Iterator[str]:
    """Every string in the table's index files, including the terms of full-text dictionaries."""
    for path in sorted((Path(table_dir) / INDICES_DIRNAME).rglob("*")):
        if path.suffix in (".lance", ".idx"):  # both are Lance files
            yield from _file_strings(path)


def _file_strings(path: Path) -> Iterator[str]:
    from lance.file import LanceFileReader

    table = LanceFileReader(str(path)).read_all().to_table()
    for name in table.column_names:
        column = table[name]
        if name.endswith("_fst_bytes"):  # full-text dictionary: an `fst` crate map of term -> id
            for blob in column.to_pylist():
                if blob:
                    yield from (key.decode("utf-8", "replace") for key in fst_keys(blob))
            continue
        for chunk in column.chunks:
            yield from _array_strings(chunk)


def _array_strings(array) -> Iterator[str]:
    import pyarrow as pa

    kind = array.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        yield from (value for value in array.to_pylist() if value is not None)
    elif (
        pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
    ):
        yield from _array_strings(array.flatten())
    elif pa.types.is_struct(kind):
        for index in range(kind.num_fields):
            yield from _array_strings(array.field(index))


def _in_predicate(column: str, ids: Iterable[str]) -> str:
    quoted = ", ".join("'" + value.replace("'", "''") + "'" for value in ids)
    return f"{column} IN ({quoted})"


# --- Reading the `fst` crate's map format (used by Lance for full-text term dictionaries) -------
# Nodes are written bottom-up and read backwards from their last (state) byte. Three node kinds,
# told apart by the state byte's top two bits. Frequent input bytes are packed into the state byte
# as an index into this table (index 0 means the input byte is stored separately).
_COMMON_INPUTS = b"te/oasripcnw.hlm-du012g=:bf3y5&_4v9678k%?xCDASFIBEjPTzRNM+LOqHG"
_EMPTY_FINAL = 0
_INDEXED_TRANSITIONS_ABOVE = 32


def fst_keys(data: bytes) -> Iterator[bytes]:
    """All keys of a serialized fst map or set, in byte order."""
    version = int.from_bytes(data[0:8], "little")
    if version not in (1, 2, 3):
        raise ValueError(f"unknown fst format version {version}")
    footer_end = len(data) - 4 if version >= 3 else len(data)  # v3 ends with a checksum
    root = int.from_bytes(data[footer_end - 8 : footer_end], "little")
    stack = [(root, b"")]
    while stack:
        addr, prefix = stack.pop()
        is_final, transitions = _node(data, addr, version)
        if is_final:
            yield prefix
        for label, target in sorted(transitions, reverse=True):
            stack.append((target, prefix + bytes([label])))


def _node(data: bytes, addr: int, version: int) -> tuple[bool, list[tuple[int, int]]]:
    """(is_final, [(input byte, target address)]) of the node whose state byte is at `addr`."""
    if addr == _EMPTY_FINAL:
        return True, []
    state = data[addr]
    kind = state >> 6
    if kind in (0b11, 0b10):  # a single transition, never final
        common = state & 0b0011_1111
        label = _COMMON_INPUTS[common - 1] if common else data[addr - 1]
        input_len = 0 if common else 1
        if kind == 0b11:  # target is the node written just before this one
            return False, [(label, addr - input_len - 1)]
        sizes = data[addr - input_len - 1]
        trans_size, out_size = sizes >> 4, sizes & 0x0F
        at = addr - input_len - 1 - trans_size
        end = at - out_size
        return False, [(label, _target(data, at, trans_size, end))]
    is_final = bool(state & 0b0100_0000)
    ntrans = state & 0b0011_1111
    ntrans_len = 0
    if ntrans == 0:
        ntrans_len = 1
        ntrans = data[addr - 1]
        ntrans = 256 if ntrans == 1 else ntrans
    sizes = data[addr - ntrans_len - 1]
    trans_size, out_size = sizes >> 4, sizes & 0x0F
    index_size = 256 if version >= 2 and ntrans > _INDEXED_TRANSITIONS_ABOVE else 0
    inputs_top = addr - ntrans_len - 1 - index_size
    final_out = out_size if is_final else 0
    end = inputs_top - ntrans - ntrans * trans_size - ntrans * out_size - final_out
    transitions = []
    for i in range(ntrans):
        label = data[inputs_top - i - 1]
        at = inputs_top - ntrans - i * trans_size - trans_size
        transitions.append((label, _target(data, at, trans_size, end)))
    return is_final, transitions


def _target(data: bytes, at: int, size: int, node_end: int) -> int:
    delta = int.from_bytes(data[at : at + size], "little")
    return _EMPTY_FINAL if delta == 0 else node_end - delta
