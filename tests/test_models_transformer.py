"""Today's transformer jobs in plain PyTorch: parameter counts against the published
checkpoints and against ``transformers`` models built from the same configs, real CPU steps at
tiny size, and the configurable Llama."""

from __future__ import annotations

import pytest
import torch

from gpuscope.core.errors import InputError
from gpuscope.graphs.export import export_graph
from gpuscope.jobs.spec import JobSpec
from gpuscope.workloads import build_model, build_workload
from gpuscope.workloads.models.llm import T5, Llama, LlamaConfig
from gpuscope.workloads.models.transformer import GPT2, BertMLM, ViT


def _n(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _meta(model: str, dataset: str) -> int:
    with torch.device("meta"):
        return _n(build_model(model, dataset))


#: Parameter counts of the published checkpoints (the models' cards on the Hugging Face hub:
#: bert-base/large-uncased with the MLM head, gpt2/-medium/-large, google/vit-base/large-
#: patch16-224, t5-small, TinyLlama-1.1B, Llama-2-7b). The papers round them: BERT 110 M /
#: 340 M, GPT-2 117 M / 345 M / 762 M, ViT 86 M / 307 M, T5-small 60 M.
PUBLISHED = {
    ("bert_base", "wikitext103"): 109_514_298,
    ("bert_large", "wikitext103"): 335_174_458,
    ("gpt2", "wikitext103"): 124_439_808,
    ("gpt2_medium", "wikitext103"): 354_823_168,
    ("gpt2_large", "wikitext103"): 774_030_080,
    ("vit_b16", "imagenet"): 86_567_656,
    ("vit_l16", "imagenet"): 304_326_632,
    ("t5_small", "wmt16_en_de"): 60_506_624,
    ("llama", "wikitext103"): 1_100_048_384,
    ("llama:dim=4096,layers=32,heads=32,kv_heads=32,ffn=11008,max_len=4096",
     "wikitext103"): 6_738_415_616,
}


@pytest.mark.parametrize("key", list(PUBLISHED))
def test_parameter_counts_match_the_published_models(key: tuple[str, str]) -> None:
    assert _meta(*key) == PUBLISHED[key]


def test_bert_base_count_by_hand() -> None:
    """Devlin et al.'s BERT-base, worked out from its layer table (H=768, 12 layers)."""
    h, v = 768, 30522
    emb = v * h + 512 * h + 2 * h + 2 * h
    layer = 3 * (h * h + h) + (h * h + h) + 2 * h + (h * 4 * h + 4 * h) + (4 * h * h + h) + 2 * h
    head = h * h + h + 2 * h + v  # dense, LN, decoder bias (weight tied)
    assert emb + 12 * layer + head == PUBLISHED[("bert_base", "wikitext103")]


HF_EQUIVALENT = [
    ("bert", dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                  intermediate_size=256, vocab_size=100, max_position_embeddings=32),
     lambda: BertMLM(2, 64, 4, 100, 32), "AutoModelForMaskedLM"),
    ("gpt2", dict(n_layer=2, n_embd=64, n_head=4, vocab_size=100, n_positions=32),
     lambda: GPT2(2, 64, 4, 100, 32), "AutoModelForCausalLM"),
    ("vit", dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                 intermediate_size=128, image_size=32, patch_size=16, num_labels=10),
     lambda: ViT(2, 64, 4, 128, 16, 3, 32, 10), "AutoModelForImageClassification"),
    ("t5", dict(num_layers=2, d_model=64, num_heads=4, d_kv=16, d_ff=128, vocab_size=100),
     lambda: T5(2, 64, 4, 16, 128, 100), "AutoModelForSeq2SeqLM"),
    ("llama", dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                   num_key_value_heads=2, intermediate_size=128, vocab_size=100),
     lambda: Llama(LlamaConfig(64, 2, 4, 2, 128, 100, 64)), "AutoModelForCausalLM"),
]


@pytest.mark.parametrize("arch,cfg,ours,auto", HF_EQUIVALENT, ids=[c[0] for c in HF_EQUIVALENT])
def test_same_parameter_count_as_transformers(arch, cfg, ours, auto) -> None:
    transformers = pytest.importorskip("transformers")
    from transformers import CONFIG_MAPPING

    with torch.device("meta"):
        ref = getattr(transformers, auto).from_config(CONFIG_MAPPING[arch](**cfg))
        assert _n(ours()) == _n(ref)


@pytest.mark.parametrize("model,dataset", [
    ("llama:dim=64,layers=2,heads=4,kv_heads=2,ffn=128,vocab=100", "tokens:seq=16,vocab=200"),
])
def test_real_cpu_step_at_tiny_size(model: str, dataset: str) -> None:
    job = JobSpec(model, dataset, "adamw", 2, 1)
    wl = build_workload(job, "cpu")
    batch = wl.sample_batch(device="cpu")
    if batch[0].dtype == torch.long:  # ids below the model's vocabulary, not the dataset's
        assert int(batch[0].max()) < 100
    before = [p.detach().clone() for p in wl.modules.parameters()]
    loss = wl.train_step(batch)
    assert torch.isfinite(loss)
    assert any(not torch.equal(a, b) for a, b in zip(before, wl.modules.parameters()))


def test_tiny_vit_trains_on_cpu() -> None:
    vit = ViT(2, 64, 4, 128, 16, 3, 32, 10)
    loss = torch.nn.functional.cross_entropy(vit(torch.randn(2, 3, 32, 32)), torch.tensor([1, 2]))
    loss.backward()
    assert torch.isfinite(loss) and vit.pos.grad is not None and vit.cls.grad is not None
    with pytest.raises(InputError, match="divisible by 16"):
        build_model("vit_b16", "image:h=40,w=40")


def test_t5_and_lm_graphs() -> None:
    g = export_graph(JobSpec("t5_small", "tokens:seq=32", "adamw", 2, 1))
    assert g.meta["param_count"] == 60_506_624
    lm = export_graph(JobSpec("gpt2", "tokens:seq=64", "adamw", 2, 1))
    # forward FLOPs ~ 2 x params x tokens (Kaplan et al. 2020), + attention
    fwd = lm.total_flops("forward")
    assert 2 * 124.4e6 * 128 * 0.95 < fwd < 2 * 124.4e6 * 128 * 1.2


def test_llama_configuration_is_canonical_and_checked() -> None:
    a = JobSpec("llama:layers=2,dim=256", "wikitext103", "adam", 1, 1)
    b = JobSpec("llama:dim=256,layers=2,heads=32", "wikitext103", "adam", 1, 1)
    assert a.model == b.model == "llama:dim=256,layers=2" and a.graph_key == b.graph_key
    assert ":" not in a.graph_key and "=" not in a.graph_key
    for bad in ("llama:depth=2", "llama:dim=0", "gpt2:layers=2"):
        with pytest.raises(InputError):
            JobSpec(bad, "wikitext103", "adam", 1, 1)
    with pytest.raises(InputError, match="exceeds the model's 1024 positions"):
        build_workload(JobSpec("gpt2", "tokens:seq=2048", "adam", 1, 1), "meta")
    with pytest.raises(InputError, match="defined for"):
        JobSpec("gpt2", "imagenet", "adam", 1, 1)
