"""Forget means gone: after a purge no file of the LanceDB table holds the forgotten text."""

import lancedb
import numpy as np
import pyarrow as pa
import pytest

from memctl.store.purge import fst_keys, index_terms, purge_rows, raw_texts

MARKER = "zebraquokka"  # one token that the full-text tokenizer keeps as it is
DIM = 384


def rows(ids, texts, seed):
    vectors = np.random.default_rng(seed).random((len(ids), DIM), dtype=np.float32)
    return pa.table(
        {
            "id": ids,
            "text": texts,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
        }
    )


@pytest.fixture(params=["one_fragment", "shares_a_fragment", "alone_in_its_fragment"])
def table_db(tmp_path, request):
    """A table with a full-text index; row m13 holds the marker.

    In one big fragment, only materialized deletions rewrite it (small fragments get merged
    anyway). Alone in its fragment (as after a one-memory append), deleting m13 drops the
    whole fragment, so compaction never sees it and only rebuilt indices lose its terms.
    """
    from lancedb.index import FTS

    db_dir = tmp_path / ".index"
    db = lancedb.connect(db_dir)
    texts = {f"m{i:02d}": f"ordinary note {i} about gardening and word{i}x" for i in range(30)}
    texts["m13"] = f"the deploy password is {MARKER} do not share"
    ids = sorted(texts)
    if request.param == "one_fragment":
        batches = [ids]
    elif request.param == "shares_a_fragment":
        batches = [ids[:10], ids[10:20], ids[20:]]
    else:
        batches = [ids[:13], ["m13"], ids[14:]]
    table = db.create_table("memories", rows(batches[0], [texts[i] for i in batches[0]], 1))
    for seed, batch in enumerate(batches[1:], start=2):
        table.add(rows(batch, [texts[i] for i in batch], seed))
    table.create_index("text", config=FTS())
    return db_dir, texts


def table_dir(db_dir):
    return db_dir / "memories.lance"


def reopen(db_dir):
    return lancedb.connect(db_dir).open_table("memories")


def files_with_raw_marker(folder):
    return [p for p in folder.rglob("*") if p.is_file() and MARKER.encode() in p.read_bytes()]


def test_plain_delete_leaves_the_text_in_the_data_files(table_db):
    db_dir, _ = table_db
    reopen(db_dir).delete("id = 'm13'")
    assert reopen(db_dir).count_rows() == 29
    assert any(MARKER in text for text in raw_texts(table_dir(db_dir)))
    assert MARKER in set(index_terms(table_dir(db_dir)))


def test_purged_text_is_in_no_file_of_the_table(table_db):
    db_dir, texts = table_db
    assert any(MARKER in text for text in raw_texts(table_dir(db_dir)))
    assert MARKER in set(index_terms(table_dir(db_dir)))

    purge_rows(db_dir, "memories", ["m13"])

    stored = list(raw_texts(table_dir(db_dir)))
    assert not [text for text in stored if MARKER in text]
    assert "m13" not in stored
    terms = set(index_terms(table_dir(db_dir)))
    assert MARKER not in terms and "deploy" not in terms and "password" not in terms
    assert files_with_raw_marker(table_dir(db_dir)) == []
    # Every other row is still stored, once: nothing else was lost.
    survivors = sorted(i for i in texts if i != "m13")
    assert sorted(t for t in stored if t in texts) == survivors
    assert {"garden", "word7x"} <= terms


def test_other_rows_stay_searchable_after_a_purge(table_db):
    db_dir, texts = table_db
    purge_rows(db_dir, "memories", ["m13"])

    table = reopen(db_dir)
    assert table.count_rows() == len(texts) - 1
    hits = table.search("word27x", query_type="fts").limit(3).to_list()
    assert [r["id"] for r in hits] == ["m27"]
    assert table.search(MARKER, query_type="fts").limit(3).to_list() == []
    wanted = table.search().where("id = 'm21'").limit(1).to_list()[0]
    nearest = table.search(np.array(wanted["vector"], dtype=np.float32)).limit(1).to_list()
    assert nearest[0]["id"] == "m21"
    assert table.list_versions()[-1]["version"] == table.version
    assert len(table.list_versions()) == 1


def test_purge_also_scrubs_text_replaced_earlier(table_db):
    """An edited memory's old text lingers behind a deletion vector until some purge rewrites it."""
    db_dir, _ = table_db
    table = reopen(db_dir)
    table.delete("id = 'm13'")
    table.add(rows(["m13"], ["the deploy password was rotated"], 4))
    assert any(MARKER in text for text in raw_texts(table_dir(db_dir)))

    purge_rows(db_dir, "memories", ["m02"])

    assert not any(MARKER in text for text in raw_texts(table_dir(db_dir)))
    assert files_with_raw_marker(table_dir(db_dir)) == []
    edited = reopen(db_dir).search().where("id = 'm13'").to_list()
    assert [r["text"] for r in edited] == ["the deploy password was rotated"]


def test_purging_every_row_drops_the_table(table_db):
    db_dir, texts = table_db
    purge_rows(db_dir, "memories", list(texts))
    assert not table_dir(db_dir).exists()
    assert list(lancedb.connect(db_dir).list_tables().tables) == []


def index_row_ids(folder):
    """Row ids listed by any index file that stores them (vector partitions, full-text docs)."""
    from lance.file import LanceFileReader

    found = set()
    for path in folder.glob("_indices/*/*"):
        if path.suffix not in (".lance", ".idx"):
            continue
        table = LanceFileReader(str(path)).read_all().to_table()
        if "_rowid" in table.column_names:
            found.update(table["_rowid"].to_pylist())
    return found


def test_vector_and_scalar_indices_forget_the_row_too(tmp_path):
    from lancedb.index import BTree, IvfPq

    db_dir = tmp_path / ".index"
    ids = [f"m{i:03d}" for i in range(300)]
    table = lancedb.connect(db_dir).create_table(
        "memories", rows(ids, [f"note {i}" for i in range(300)], 1)
    )
    table.add(rows([f"secret-{MARKER}"], [f"{MARKER} lives here"], 2))
    table.create_index("vector", config=IvfPq(num_partitions=2, num_sub_vectors=16))
    table.create_index("id", config=BTree())
    marker_row = table.search().where(f"id = 'secret-{MARKER}'").with_row_id(True).to_list()[0]
    assert marker_row["_rowid"] in index_row_ids(table_dir(db_dir))
    assert f"secret-{MARKER}" in set(index_terms(table_dir(db_dir)))

    purge_rows(db_dir, "memories", [f"secret-{MARKER}"])

    assert marker_row["_rowid"] not in index_row_ids(table_dir(db_dir))
    assert not [t for t in index_terms(table_dir(db_dir)) if MARKER in t]
    assert files_with_raw_marker(table_dir(db_dir)) == []
    table = reopen(db_dir)
    assert {i.name for i in table.list_indices()} == {"vector_idx", "id_idx"}
    probe = table.search().where("id = 'm150'").limit(1).to_list()[0]
    nearest = table.search(np.array(probe["vector"], dtype=np.float32)).limit(1).to_list()
    assert nearest[0]["id"] == "m150"


def test_purge_of_a_missing_table_does_nothing(tmp_path):
    purge_rows(tmp_path / ".index", "memories", ["m1"])
    assert not (tmp_path / ".index").exists()


def test_ids_with_quotes_are_matched_literally(table_db):
    db_dir, texts = table_db
    purge_rows(db_dir, "memories", ["m01' OR id <> '"])
    assert reopen(db_dir).count_rows() == len(texts)


def test_fst_reader_lists_every_term_of_a_full_text_dictionary(table_db):
    db_dir, texts = table_db
    terms = set(index_terms(table_dir(db_dir)))
    assert {f"word{i}x" for i in range(30) if f"m{i:02d}" != "m13"} <= terms
    assert MARKER in terms


def test_fst_reader_rejects_unknown_formats():
    with pytest.raises(ValueError, match="fst format"):
        list(fst_keys((99).to_bytes(8, "little") + bytes(40)))
