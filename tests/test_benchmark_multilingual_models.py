"""The model-comparison benchmark ranks each query against every memory and scores it per group."""

from __future__ import annotations

import json

from benchmarks import multilingual_models


def test_each_query_is_scored_by_the_rank_of_its_target(fake_embedder, tmp_path):
    memories = [
        {"id": f"m{i}", "lang": "en", "text": f"note {i} about topic{i} and subject{i}"}
        for i in range(70)
    ]
    queries = [
        {"group": "zh_paraphrase", "target": "m3", "query": "topic3 subject3"},
        # m5, m6 and m8 share words with it, m4 none: its target is not in the top 3
        {"group": "zh_paraphrase", "target": "m4", "query": "topic5 subject5 topic6 topic8"},
        {"group": "en_to_zh", "target": "m7", "query": "topic7"},
    ]
    data = tmp_path / "set.json"
    data.write_text(json.dumps({"memories": memories, "queries": queries}), encoding="utf-8")
    out = tmp_path / "models.json"

    code = multilingual_models.main(
        ["--data", str(data), "--models", "all-MiniLM-L6-v2-int8", "--repeats", "1"]
        + ["--json", str(out)]
    )

    assert code == 0
    [result] = json.loads(out.read_text(encoding="utf-8"))["results"]
    scores = result["scores"]
    assert scores["zh_paraphrase"] == {"n": 2, "top1": 0.5, "top3": 0.5}
    assert scores["en_to_zh"] == {"n": 1, "top1": 1.0, "top3": 1.0}
    assert scores["overall"]["n"] == 3 and "zh_to_en" not in scores
    assert result["texts_per_s"] > 0 and result["cpu_ms_per_text"] >= 0
    assert fake_embedder.queries[-3:] == [q["query"] for q in queries]
