"""The cascade's fused prefill (judge_worker.backends.cascade_prefill) on small shapes."""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config, Qwen3Config

from judge_worker.backends.cascade import generate_cascade
from judge_worker.backends.cascade_prefill import (
    fused_prefill_for,
    rms_norm,
    rotary,
    silu_mul,
)
from judge_worker.backends.prefix_decode import PrefixGroup

TINY: dict[str, Any] = {
    "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256,
    "max_position_embeddings": 2048, "tie_word_embeddings": False,
}  # fmt: skip


def _model(config_cls: Any, **extra: Any) -> Any:
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(
        config_cls(**TINY, **extra), dtype=torch.float32, attn_implementation="sdpa"
    )
    return model.eval()


def _groups(seed: int) -> list[PrefixGroup]:
    rng = random.Random(seed)
    return [
        PrefixGroup(
            [rng.randrange(5, 250) for _ in range(rng.randint(15, 40))],
            [[rng.randrange(5, 250) for _ in range(rng.randint(2, 9))] for _ in range(n)],
        )
        for n in (3, 1, 4, 2)
    ]


def _plain(model: Any, prompt: list[int], new: int) -> list[int]:
    with torch.inference_mode():
        out = model.generate(
            torch.tensor([prompt]), max_new_tokens=new, min_new_tokens=new, do_sample=False,
            pad_token_id=0,
        )  # fmt: skip
    return list(out[0, len(prompt) :].tolist())


@pytest.mark.slow  # tiny random models generating on CPU
@pytest.mark.parametrize("config_cls", [Qwen2Config, LlamaConfig])
@pytest.mark.parametrize("prefill", ["fused", "compiled"])
@pytest.mark.parametrize("chunk", [4096, 25])
def test_fused_prefill_generates_what_plain_generate_does(
    config_cls: Any, prefill: str, chunk: int
) -> None:
    # Qwen2 has query/key/value biases, Llama none; chunk=25 splits prefixes and a group's rows
    # over several packed calls. ("compiled" runs eager off CUDA.)
    model = _model(config_cls)
    groups = _groups(1)
    got = generate_cascade(
        model, groups, max_new_tokens=8, prefill=prefill, prefill_chunk_tokens=chunk
    )
    for g, grp in enumerate(groups):
        for s, suffix in enumerate(grp.suffixes):
            assert got[g][s] == _plain(model, list(grp.prefix) + list(suffix), 8)


def test_the_fused_projections_are_views_of_one_matrix_with_the_same_values() -> None:
    model = _model(Qwen2Config)
    attn, mlp = model.model.layers[0].self_attn, model.model.layers[0].mlp
    before = [
        p.detach().clone() for p in (attn.q_proj.weight, attn.v_proj.bias, mlp.up_proj.weight)
    ]
    fused = fused_prefill_for(model, compiled=False)
    assert fused is not None
    qkv_w, qkv_b = fused.fused[0]
    after = (attn.q_proj.weight, attn.v_proj.bias, mlp.up_proj.weight)
    for old, new in zip(before, after, strict=True):
        assert torch.equal(old, new)
    # One copy: the modules' parameters share the fused matrix's storage.
    assert attn.k_proj.weight.data_ptr() == qkv_w[64:96].data_ptr()
    assert qkv_b is not None and attn.v_proj.bias.data_ptr() == qkv_b[96:].data_ptr()
    # A second fused prefill of the same model reuses it.
    again = fused_prefill_for(model, compiled=False)
    assert again is not None and again.fused[0][0] is qkv_w


@pytest.mark.slow  # tiny random models generating on CPU
def test_a_model_converted_after_fusing_is_fused_again() -> None:
    # .to() copies each parameter on its own: the earlier fused matrix no longer holds the
    # modules' weights, and a prefill through it would use the old values.
    model = _model(Qwen2Config)
    groups = _groups(7)
    generate_cascade(model, groups, max_new_tokens=2, prefill="fused")
    model.to(torch.float64)
    fused = fused_prefill_for(model, compiled=False)
    assert fused is not None and fused.fused[0][0].dtype == torch.float64
    got = generate_cascade(model, groups, max_new_tokens=4, prefill="fused")
    assert got == generate_cascade(model, groups, max_new_tokens=4, prefill="model")


def test_layers_with_query_key_norms_are_left_to_the_model() -> None:
    assert fused_prefill_for(_model(Qwen3Config, head_dim=16), compiled=False) is None
    assert generate_cascade(_model(Qwen3Config, head_dim=16), _groups(2)[:1], max_new_tokens=2,
                            prefill="fused")  # fmt: skip


def test_the_pointwise_steps_equal_the_modules_arithmetic() -> None:
    torch.manual_seed(4)
    model = _model(Qwen2Config)
    layer = model.model.layers[0]
    x = torch.randn(5, 64)
    norm = layer.input_layernorm
    torch.testing.assert_close(rms_norm(x, norm.weight, norm.variance_epsilon), norm(x))
    gate, up = torch.randn(5, 128), torch.randn(5, 128)
    torch.testing.assert_close(silu_mul(gate, up), layer.mlp.act_fn(gate) * up, rtol=0, atol=0)
    # Rotary on the split projection equals transformers' on [1, heads, tokens, dim].
    from transformers.models.qwen2.modeling_qwen2 import apply_rotary_pos_emb

    pos = torch.tensor([[3, 4, 5, 0, 1]])
    cos, sin = model.model.rotary_emb(x[None], pos)
    qkv = torch.randn(5, (4 + 2 + 2) * 16)
    q, k, v = rotary(qkv, cos[0], sin[0], 4, 2)
    q_ref = qkv[:, :64].view(1, 5, 4, 16).transpose(1, 2)
    k_ref = qkv[:, 64:96].view(1, 5, 2, 16).transpose(1, 2)
    q_exp, k_exp = apply_rotary_pos_emb(q_ref, k_ref, cos, sin)
    torch.testing.assert_close(q, q_exp[0].transpose(0, 1), rtol=0, atol=0)
    torch.testing.assert_close(k, k_exp[0].transpose(0, 1), rtol=0, atol=0)
    torch.testing.assert_close(v, qkv[:, 96:].view(5, 2, 16), rtol=0, atol=0)


def test_an_unknown_prefill_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="prefill must be one of"):
        generate_cascade(_model(Qwen2Config), _groups(3), max_new_tokens=2, prefill="turbo")


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (device tool)")


@cuda
@pytest.mark.parametrize("prefill", ["fused", "compiled"])
def test_fused_prefill_on_cuda_agrees_with_the_models_prefill(prefill: str) -> None:
    model = _model(Qwen2Config).to(device="cuda", dtype=torch.bfloat16)
    groups = _groups(5)
    ref = generate_cascade(model, groups, max_new_tokens=6, prefill="model")
    got = generate_cascade(model, groups, max_new_tokens=6, prefill=prefill)
    firsts = [
        (a[0], b[0]) for ga, gb in zip(got, ref, strict=True) for a, b in zip(ga, gb, strict=True)
    ]
    # bf16 sums in another order can flip near-tied logits of random weights.
    assert sum(a == b for a, b in firsts) >= 0.8 * len(firsts)


def test_a_prefill_that_fails_falls_back_to_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    from judge_worker.backends import cascade_prefill

    def broken_merge(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no compiler here")

    real_forward = cascade_prefill.FusedPrefill.forward

    def forward_with_broken_merge(self: Any, state: Any, *args: Any) -> Any:
        self.merge = broken_merge  # fails inside the attention, as a compiled merge would
        return real_forward(self, state, *args)

    monkeypatch.setattr(cascade_prefill.FusedPrefill, "forward", forward_with_broken_merge)
    model = _model(Qwen2Config)
    groups = _groups(6)
    got = generate_cascade(model, groups, max_new_tokens=3, prefill="compiled")
    assert got == generate_cascade(model, groups, max_new_tokens=3, prefill="model")
