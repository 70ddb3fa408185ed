"""validate on real (tiny, random-weight) causal LMs: compact capture, real speculative
decoding, run directories, report, `spectheory validate` and `verify --logits`. No download:
Qwen2-style models are built from a config here and the tokenizer is made offline."""
from __future__ import annotations

import json


import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from spectheory.distributions import DistributionError, softmax  # noqa: E402
from spectheory.divergences import entropy, kl_divergence, overlap, total_variation  # noqa: E402
from spectheory.rules.sd import BROKEN_SWAPPED_RATIO, STANDARD  # noqa: E402
from spectheory.validate import replay  # noqa: E402
from spectheory.validate.capture import capture_trace  # noqa: E402
from spectheory.validate.evidence import sd_evidence  # noqa: E402
from spectheory.validate.experiment import load_run, run_experiment  # noqa: E402
from spectheory.validate.hf import common_vocab  # noqa: E402
from spectheory.validate.models import ModelError, check_same_tokenizer, require_memory, stop_ids  # noqa: E402
from spectheory.validate.prompts import Prompt, load_prompts, render  # noqa: E402
from spectheory.validate.specdec import SDRun, speculative_decode  # noqa: E402
from spectheory.validate.trace import CompactTrace, sampling_probs, sufficient_statistics  # noqa: E402

V = 64
WORDS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "[UNK]", "user", "assistant"] + [f"w{i}" for i in range(V - 6)]
TEMPLATE = ("{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> {% endfor %}"
            "{% if add_generation_prompt %}<|im_start|> assistant {% endif %}")
PROMPT = [1, 4, 10, 11, 12, 2, 1, 5]


def tiny_model(seed=0, noise=0.0, vocab=V):
    torch.manual_seed(0)
    cfg = transformers.Qwen2Config(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                                   initializer_range=0.2, tie_word_embeddings=False)
    m = transformers.Qwen2ForCausalLM(cfg).eval()
    if noise:
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in m.parameters():
                p.add_(noise * torch.randn(p.shape, generator=g))
    return m


def tiny_tokenizer(words=WORDS):
    from tokenizers import Tokenizer, models, pre_tokenizers
    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", eos_token="<|im_end|>")
    tok.chat_template = TEMPLATE
    return tok


@pytest.fixture(scope="module")
def pair():
    torch.set_num_threads(1)
    return tiny_model(), tiny_model(seed=1, noise=0.06)


def direct_probs(model, prompt, tokens, temperature):
    """Distributions at every generated position from one uncached forward over the text."""
    ids = torch.tensor([list(prompt) + list(tokens)])
    with torch.no_grad():
        z = model(ids).logits[0, len(prompt) - 1: len(prompt) - 1 + len(tokens)].double().numpy()
    return sampling_probs(z, temperature)


# --- sufficient statistics and the compact format -----------------------------------------

def test_sufficient_statistics_match_direct_computation():
    rng = np.random.default_rng(0)
    p = softmax(rng.normal(0, 2, (9, 30)))
    q = softmax(rng.normal(0, 2, (9, 30)))
    q[2, 5] = 0.0  # KL(p‖q) = +inf there
    q[2] /= q[2].sum()
    tok = rng.integers(0, 30, 9)
    st = sufficient_statistics(p, q, tok, top_k=7)
    np.testing.assert_allclose(st["beta"], overlap(p, q), rtol=0, atol=1e-15)
    np.testing.assert_allclose(st["tv"], total_variation(p, q), rtol=0, atol=1e-15)
    np.testing.assert_allclose(st["beta"] + st["tv"], 1.0, atol=1e-14)
    fin = np.arange(9) != 2
    np.testing.assert_allclose(st["kl_pq"][fin], kl_divergence(p[fin], q[fin]), rtol=1e-12)
    assert st["kl_pq"][2] == np.inf
    np.testing.assert_allclose(st["kl_qp"], kl_divergence(q, p), rtol=1e-12)
    np.testing.assert_allclose(st["entropy_p"], entropy(p), rtol=1e-12)
    np.testing.assert_allclose(st["entropy_q"], entropy(q), rtol=1e-12)
    np.testing.assert_array_equal(st["p_token"], p[np.arange(9), tok])
    np.testing.assert_array_equal(st["q_token"], q[np.arange(9), tok])
    for t in range(9):  # the slice is the 7 largest p + q, with exact leftovers
        ids = st["slice_ids"][t]
        assert set(ids) == set(np.argsort(-(p[t] + q[t]), kind="stable")[:7])
        np.testing.assert_allclose(st["slice_p"][t], p[t, ids], rtol=1e-6)
        assert st["p_rest"][t] == pytest.approx(1 - p[t, ids].sum(), abs=1e-14)
        assert st["q_rest"][t] == pytest.approx(1 - q[t, ids].sum(), abs=1e-14)
        assert st["beta_slice"][t] == pytest.approx(np.minimum(p[t, ids], q[t, ids]).sum(), abs=1e-14)


def test_sampling_probs_temperature_topk_topp():
    z = np.array([[2.0, 1.0, 0.5, -1.0, 0.0]])
    np.testing.assert_array_equal(sampling_probs(z, 0.0), [[1, 0, 0, 0, 0]])
    np.testing.assert_allclose(sampling_probs(z, 0.5), softmax(z, 0.5))
    k2 = sampling_probs(z, 1.0, top_k=2)
    np.testing.assert_allclose(k2[0, :2], softmax(z[:, :2])[0])
    assert (k2[0, 2:] == 0).all()
    p = softmax(z)[0]
    tp = sampling_probs(z, 1.0, top_p=p[0] + 0.01)[0]  # needs the two most probable tokens
    np.testing.assert_allclose(tp[:2], p[:2] / p[:2].sum())
    assert (tp[2:] == 0).all()
    with pytest.raises(ValueError, match="temperature"):
        sampling_probs(z, -1.0)
    with pytest.raises(DistributionError, match="NaN"):
        sampling_probs(np.array([np.nan, 1.0]), 1.0)


def test_compact_trace_round_trip_and_errors(tmp_path):
    rng = np.random.default_rng(1)
    p, q = softmax(rng.normal(0, 2, (5, 12))), softmax(rng.normal(0, 2, (5, 12)))
    tr = CompactTrace.from_distributions(p, q, np.arange(5), top_k=4, meta=dict(name="x", category="c"))
    back = CompactTrace.load(tr.save(tmp_path / "t.npz"))
    for k in tr.stats:
        np.testing.assert_array_equal(back.stats[k], tr.stats[k])
    np.testing.assert_array_equal(back.slice_ids, tr.slice_ids)
    assert (back.name, back.category, back.k, back.T) == ("x", "c", 4, 5)
    np.savez(tmp_path / "bad.npz", a=1)
    with pytest.raises(ValueError, match="not a spectheory.trace/3"):
        CompactTrace.load(tmp_path / "bad.npz")
    with pytest.raises(DistributionError, match="mismatched vocabularies"):
        sufficient_statistics(p, q[:, :-1], np.arange(5))
    with pytest.raises(DistributionError, match="mismatched lengths"):
        sufficient_statistics(p, q[:-1], np.arange(5))
    with pytest.raises(DistributionError, match="tokens must lie"):
        sufficient_statistics(p, q, np.full(5, 12))
    with pytest.raises(DistributionError, match="slices"):
        CompactTrace(tr.tokens, tr.stats, tr.slice_ids[:, :3], tr.slice_p, tr.slice_q)


# --- capture on a tiny Qwen2 pair ---------------------------------------------------------

def test_capture_records_exact_statistics(pair):
    tgt, drf = pair
    tr = capture_trace(tgt, drf, PROMPT, 24, temperature=1.0, seed=3, slice_k=16)
    assert tr.T == 24 and tr.k == 16 and tr.meta["V"] == V
    p = direct_probs(tgt, PROMPT, tr.tokens, 1.0)
    q = direct_probs(drf, PROMPT, tr.tokens, 1.0)
    # KV-cached vs uncached forwards agree to float32 rounding of the logits
    np.testing.assert_allclose(tr.beta, overlap(p, q), atol=2e-6)
    np.testing.assert_allclose(tr.stats["kl_pq"], kl_divergence(p, q), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(tr.stats["p_token"], p[np.arange(24), tr.tokens], rtol=1e-4)
    assert 0.2 < tr.beta.mean() < 0.95  # a non-trivial pair
    assert np.isfinite(tr.target_call_s[1:]).all() and (tr.target_call_s[1:] > 0).all()
    # replay on the compact trace uses the recorded exact β; the lumped Monte Carlo β is
    # bounded by β + min(p_rest, q_rest)
    rep = replay(tr, 3, n_mc=50, seed=0)
    np.testing.assert_array_equal(rep.beta, tr.beta)
    assert (rep.beta_mc >= rep.beta - 1e-6).all()
    assert (rep.beta_mc <= rep.beta + np.minimum(tr.stats["p_rest"], tr.stats["q_rest"]) + 1e-6).all()
    with pytest.raises(ValueError, match="temperature"):
        replay(tr, 3, temperature=0.5)


def test_capture_stops_on_stop_token(pair):
    tgt, drf = pair
    free = capture_trace(tgt, drf, PROMPT, 30, temperature=0.0)
    stop = int(free.tokens[5])
    first = int(np.flatnonzero(free.tokens == stop)[0])
    tr = capture_trace(tgt, drf, PROMPT, 30, temperature=0.0, stop_ids=[stop])
    np.testing.assert_array_equal(tr.tokens, free.tokens[:first + 1])
    assert tr.meta["stopped"]


# --- real speculative decoding ------------------------------------------------------------

@pytest.mark.parametrize("gamma", [1, 3, 5])
def test_greedy_sd_emits_the_targets_greedy_text(pair, gamma):
    """Lossless at T = 0: SD (KV caches cropped after rejections) emits exactly the target's
    greedy continuation."""
    tgt, drf = pair
    ar = capture_trace(tgt, drf, PROMPT, 40, temperature=0.0)
    run = speculative_decode(tgt, drf, PROMPT, gamma, 40, temperature=0.0)
    np.testing.assert_array_equal(run.tokens, ar.tokens)
    assert run.emitted.sum() == 40 and (run.target_call_k[1:] == gamma + 1).all()
    assert np.isfinite(run.ar_probe_s[:-1]).all()  # the AR probe left the caches intact (same text)
    assert set(np.unique(run.accept_prob)) <= {0.0, 1.0}
    np.testing.assert_array_equal(run.tau, np.cumprod(run.accept_prob, axis=1).sum(axis=1))
    assert 0 < run.tau.mean() < gamma  # both accepts and rejections happened


def test_probe_every_thins_the_ar_probe_only(pair):
    """probe_every=k times the autoregressive probe at iterations 0, k, 2k, … and nowhere else;
    the probe is cropped away again, so the emitted text and every record but ar_probe_s are the
    run without thinning."""
    tgt, drf = pair
    full = speculative_decode(tgt, drf, PROMPT, 2, 40, temperature=1.0, seed=3)
    thin = speculative_decode(tgt, drf, PROMPT, 2, 40, temperature=1.0, seed=3, probe_every=3)
    np.testing.assert_array_equal(thin.tokens, full.tokens)
    np.testing.assert_array_equal(thin.tau, full.tau)
    probed = np.isfinite(thin.ar_probe_s[:-1])
    assert probed.size >= 6
    np.testing.assert_array_equal(probed, np.arange(probed.size) % 3 == 0)
    with pytest.raises(ValueError, match="probe_every"):
        speculative_decode(tgt, drf, PROMPT, 2, 5, probe_every=0)


def test_sd_records_match_direct_computation(pair, tmp_path):
    tgt, drf = pair
    run = speculative_decode(tgt, drf, PROMPT, 3, 30, temperature=1.0, seed=5)
    # the committed text's target distributions at each iteration's first draft position
    starts = len(PROMPT) + np.concatenate([[0], np.cumsum(run.tau + 1)[:-1]])
    text = list(PROMPT) + list(run.tokens) + [0] * 8
    ids = torch.tensor([text])
    with torch.no_grad():
        zt, zd = tgt(ids).logits[0].double().numpy(), drf(ids).logits[0].double().numpy()
    b1 = overlap(softmax(zt[starts - 1]), softmax(zd[starts - 1]))
    keep = starts - len(PROMPT) < len(run.tokens)
    np.testing.assert_allclose(run.beta[keep, 0], b1[keep], atol=2e-6)
    back = SDRun.load(run.save(tmp_path / "r.npz"))
    np.testing.assert_array_equal(back.tau, run.tau)
    assert back.meta["rule"] == run.meta["rule"] and back.gamma == 3


def test_on_policy_tests_pass_and_catch_a_broken_verifier(pair, tmp_path):
    """sd.acceptance (first draft accepted w.p. Σmin(p,q)) and sd.expected_tokens (E[τ+1 |
    drafts]) as z-tests at α = 0.001 over ~330 iterations (γ = 4, 6 prompts × 96 tokens):
    the correct verifier passes, min(1, q/p) is rejected in both."""
    tgt, drf = pair
    prompts = [Prompt(f"p{i}", "code" if i % 2 else "chat", "", ()) for i in range(6)]
    enc = {p.name: PROMPT[:3] + [10 + i] for i, p in enumerate(prompts)}

    base = tmp_path / "capture"
    run_experiment(base, tgt, drf, prompts, lambda p: enc[p.name], gammas=(4,), max_new_tokens=96,
                   temperature=1.0, seed=11, slice_k=8, progress=False, sd=False)

    def run_dir(name, rule):
        import shutil
        d = tmp_path / name
        shutil.copytree(base, d)
        for i, p in enumerate(prompts):
            r = speculative_decode(tgt, drf, enc[p.name], 4, 96, temperature=1.0, seed=11 + i, rule=rule,
                                   category=p.category)
            (d / "sd" / "g4" / p.category).mkdir(parents=True, exist_ok=True)
            r.save(d / "sd" / "g4" / p.category / f"{p.name}.npz")
        return load_run(d)

    good = sd_evidence(run_dir("good", STANDARD), alpha=1e-3)
    bad = sd_evidence(run_dir("bad", BROKEN_SWAPPED_RATIO), alpha=1e-3)
    (acc,) = [e for e in good["sd.acceptance"] if e.outcome != "info"]
    tok, n_out = [e for e in good["sd.expected_tokens"] if e.outcome != "info"]
    assert acc.n > 500 and acc.p_value > 1e-3 and acc.outcome != "fail"  # every verified position, not 1 a step
    assert tok.n == acc.n and tok.p_value > 1e-3 and tok.outcome != "fail"
    assert n_out.outcome == "pass" and "τ + 1" in n_out.instance
    assert "n needed" in acc.note and "n had" in tok.note
    assert [e.outcome for e in bad["sd.acceptance"] if e.outcome != "info"] == ["fail"]
    assert [e.outcome for e in bad["sd.expected_tokens"] if e.outcome != "info"] == ["fail", "pass"]
    infos = [e for e in good["sd.walltime"]]
    assert infos and all(e.outcome == "info" and e.mode == "logits" for e in infos)
    assert {e.instance.split()[0] for e in infos} == {"chat", "code"}


# --- vocabularies, tokenizers, memory, prompts --------------------------------------------

def test_mismatched_vocabularies_are_refused():
    a, b = tiny_model(vocab=V), tiny_model(vocab=V + 8)
    with pytest.raises(ValueError, match="mismatched vocabularies"):
        common_vocab(a, b)
    assert common_vocab(a, b, tiny_tokenizer()) == V  # both cover the tokenizer: cut to it
    with pytest.raises(ValueError, match="mismatched vocabularies"):
        speculative_decode(a, b, PROMPT, 2, 4)
    other = tiny_tokenizer(WORDS[:-1] + ["zzz"])
    with pytest.raises(ModelError, match="tokenizers differ"):
        check_same_tokenizer(tiny_tokenizer(), other)
    check_same_tokenizer(tiny_tokenizer(), tiny_tokenizer())


def test_memory_check_is_a_clear_message():
    with pytest.raises(ModelError, match="not enough memory"):
        require_memory(1e9, "load a model")


def test_prompt_files_chat_template_and_stop_ids(tmp_path):
    tok = tiny_tokenizer()
    f = tmp_path / "mine.jsonl"
    f.write_text('{"prompt": "w1 w2", "category": "code"}\n{"prompt": "w3"}\n')
    ps = load_prompts(str(f))
    assert [(p.category, p.text) for p in ps] == [("code", "w1 w2"), ("mine", "w3")]
    ids = render(ps[0], tok)
    assert tok.convert_ids_to_tokens(ids) == ["<|im_start|>", "user", "w1", "w2", "<|im_end|>",
                                              "<|im_start|>", "assistant"]
    assert render(ps[0], tok, chat=False) == tok.convert_tokens_to_ids(["w1", "w2"])
    assert stop_ids(tok) == [0, 2]  # <|endoftext|> and <|im_end|>
    with pytest.raises(Exception, match="unknown prompt set"):
        load_prompts("no-such-set")


# --- the commands, end to end -------------------------------------------------------------

def test_validate_command_and_verify_logits(pair, tmp_path):
    from typer.testing import CliRunner

    from spectheory.cli.main import app
    tgt, drf = pair
    tdir, ddir = tmp_path / "target", tmp_path / "draft"
    for m, d in ((tgt, tdir), (drf, ddir)):
        m.save_pretrained(d)
        tiny_tokenizer().save_pretrained(d)
    pf = tmp_path / "prompts.jsonl"
    pf.write_text("\n".join(json.dumps({"prompt": f"w{i} w{i + 1} w{i + 2}", "category": c, "name": f"{c}{i}"})
                            for i, c in enumerate(["code", "chat", "code", "chat"])))
    out = tmp_path / "run"
    cli = CliRunner()
    args = ["validate", "--target", str(tdir), "--draft", str(ddir), "--prompts", str(pf), "--n", "4",
            "--gammas", "1,3", "--max-new-tokens", "12", "--out", str(out), "--no-progress", "--threads", "1"]
    res = cli.invoke(app, args)
    assert res.exit_code == 0, res.output
    rep = json.loads((out / "report.json").read_text())
    rows = {(r["category"], r["gamma"]): r for r in rep["rows"]}
    assert set(rows) == {(c, g) for c in ("chat", "code", "all") for g in (1, 3)}
    for r in rows.values():
        assert r["tokens_measured"] >= 1 and r["speedup_measured"] > 0 and r["n_iterations"] > 0
        assert r["tokens_closed_form"] == pytest.approx((1 - r["alpha_capture"] ** (r["gamma"] + 1))
                                                        / (1 - r["alpha_capture"]))
    assert (out / "tokens_per_iteration_code.png").stat().st_size > 1000
    mtime = (out / "traces" / "code" / "code0.npz").stat().st_mtime_ns
    assert cli.invoke(app, args).exit_code == 0  # resumed: nothing recomputed
    assert (out / "traces" / "code" / "code0.npz").stat().st_mtime_ns == mtime

    res = cli.invoke(app, ["verify", "--quick", "--claims", "sd.acceptance", "--no-progress", "--logits", str(out),
                           "--json", str(tmp_path / "v.json"), "--markdown", str(tmp_path / "v.md")])
    assert res.exit_code == 0, res.output
    claim = json.loads((tmp_path / "v.json").read_text())["claims"][0]
    modes = [e["mode"] for e in claim["evidence"]]
    assert "logits" in modes and "exact" in modes
    res = cli.invoke(app, ["verify", "--claims", "sd.acceptance", "--logits", str(tmp_path)])
    assert res.exit_code != 0 and "run.json" in res.output

    bad = cli.invoke(app, ["validate", "--target", str(tdir), "--draft", str(tmp_path / "nothing"),
                           "--prompts", str(pf), "--out", str(tmp_path / "r2"), "--no-progress"])
    assert bad.exit_code == 2 and "error:" in bad.output and "Traceback" not in bad.output


def test_numpy_side_needs_no_torch():
    import subprocess
    import sys
    code = ("import sys, spectheory.validate.trace, spectheory.validate.replay, spectheory.validate.analysis, spectheory.validate.evidence, spectheory.validate.report\n"
            "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


