"""Prompt lookup, the drafter without a draft model (spectheory.validate.drafters): its drafts equal
transformers' PromptLookupCandidateGenerator on the same inputs, and real speculative decoding with
it (point-mass drafts, 0 to γ per iteration) is exact on a tiny random-weight model: greedy emits
the target's greedy text, the pooled martingale tests pass, the broken verifier fails them."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from transformers.generation.candidate_generator import PromptLookupCandidateGenerator  # noqa: E402

from spectheory.rules.sd import BROKEN_SWAPPED_RATIO  # noqa: E402
from spectheory.validate.drafters import PromptLookup, drafter_from_config  # noqa: E402
from spectheory.validate.evidence import sd_tests  # noqa: E402
from spectheory.validate.specdec import SDRun, speculative_decode_batch  # noqa: E402

from test_validate_models import V, tiny_model  # noqa: E402


def reference(ids, n, ngram=2, eos=(), max_length=None):
    gen = PromptLookupCandidateGenerator(eos_token_id=torch.tensor(eos) if eos else None, num_output_tokens=n,
                                         max_matching_ngram_size=ngram,
                                         max_length=max_length if max_length is not None else 10 ** 9)
    out, _ = gen.get_candidates(torch.tensor([ids]))
    return out[0, len(ids):].tolist()


@pytest.mark.parametrize("alphabet", [3, 6, 20])
def test_drafts_equal_transformers_prompt_lookup(alphabet):
    """Random sequences over a small alphabet (many n-gram matches, earliest-first choice, the
    fallback from 2-grams to 1-grams, no match), stop tokens inside the continuation, length caps."""
    rng = np.random.default_rng(alphabet)
    seen = {"none": 0, "cut": 0, "full": 0}
    for trial in range(300):
        L = int(rng.integers(1, 40))
        ids = rng.integers(0, alphabet, L).tolist()
        n = int(rng.integers(1, 11))
        ngram = int(rng.integers(1, 4))
        eos = (int(rng.integers(0, alphabet)),) if trial % 3 == 0 else ()
        cap = int(rng.integers(L + 1, L + 6)) if trial % 5 == 0 else None
        got = PromptLookup(n, ngram, eos, cap).candidates(ids)
        assert got == reference(ids, n, ngram, eos, cap), (ids, n, ngram, eos, cap)
        seen["none" if not got else "full" if len(got) == n else "cut"] += 1
    assert min(seen.values()) > 0, seen   # every kind of answer was compared


def test_lookup_bad_input_and_config():
    with pytest.raises(ValueError, match="num_output_tokens"):
        PromptLookup(0)
    with pytest.raises(ValueError, match="unknown drafter"):
        drafter_from_config({"kind": "early-exit"})
    assert drafter_from_config(None) is None and drafter_from_config({"kind": "model"}) is None
    d = drafter_from_config(PromptLookup(4, 2).config(), eos_ids=(2,))
    assert d == PromptLookup(4, 2, (2,))


def _repetitive_prompts(rng, n):
    """Prompts that repeat themselves, so that prompt lookup finds matches."""
    out = []
    for _ in range(n):
        motif = rng.integers(3, V, int(rng.integers(3, 7))).tolist()
        out.append((motif * 4)[: int(rng.integers(8, 20))])
    return out


@pytest.fixture(scope="module")
def target():
    torch.set_num_threads(1)
    return tiny_model()


def test_greedy_lookup_emits_the_targets_greedy_text(target):
    """At T = 0 speculative decoding with any drafter emits the target's greedy text."""
    rng = np.random.default_rng(0)
    prompts = _repetitive_prompts(rng, 4)
    runs = speculative_decode_batch(target, None, prompts, 4, 24, 0.0, drafter=PromptLookup(4), batch=3,
                                    probe_every=2)
    for p, r in zip(prompts, runs):
        ref = target.generate(torch.tensor([p]), do_sample=False, max_new_tokens=24, pad_token_id=0)[0, len(p):]
        assert r.tokens.tolist() == ref.tolist()
        assert r.n_drafted is not None and (r.n_drafted <= 4).all()
    k = np.concatenate([r.n_drafted for r in runs])
    assert (k == 0).any() and (k > 0).any()      # iterations with and without a match


def test_lookup_sd_records_and_martingale_tests(target, tmp_path):
    """T = 1: point-mass drafts, so r_j = β_j = p_j(x_j) and q_j(x_j) = 1; the pooled tests pass on
    the drafted positions only; the broken verifier (min(1, q/p) = 1: accept every draft) fails."""
    rng = np.random.default_rng(1)
    prompts = _repetitive_prompts(rng, 12)
    seeds = list(range(100, 112))
    runs = speculative_decode_batch(target, None, prompts, 3, 40, 1.0, drafter=PromptLookup(3), batch=6,
                                    seeds=seeds)
    for r in runs:
        d = r.drafted
        j = np.arange(3)[None, :]
        on = j < d[:, None]
        assert np.isnan(r.accept_prob[~on]).all() and (r.drafts[~on] == -1).all()
        np.testing.assert_allclose(r.accept_prob[on], r.p_x[on])
        np.testing.assert_allclose(r.beta[on], r.p_x[on])
        assert (r.q_x[on] == 1.0).all()
        assert (r.tau <= d).all() and (r.n_out == r.tau + 1).all()
        acc, rj, bj = r.verified()
        assert acc.size == int(np.minimum(r.tau + 1, d).sum()) and np.isfinite(rj).all()
        f = r.save(tmp_path / f"{r.meta['name']}.npz")
        back = SDRun.load(f)
        np.testing.assert_array_equal(back.n_drafted, r.n_drafted)
    acc, tok, rows = sd_tests({3: runs}, alpha=1e-3, tolerance=0.1, label="lookup")
    assert acc[0].outcome == "pass" and tok[0].outcome == "pass", (acc[0], tok[0])
    bad = speculative_decode_batch(target, None, prompts, 3, 40, 1.0, drafter=PromptLookup(3), batch=6,
                                   seeds=seeds, rule=BROKEN_SWAPPED_RATIO)
    acc_b, _, _ = sd_tests({3: bad}, alpha=1e-3, tolerance=0.1, label="control")
    assert acc_b[0].outcome == "fail" and acc_b[0].measured == 1.0


def test_lookup_refuses_a_draft_model_and_a_drafter_together(target):
    with pytest.raises(ValueError, match="not both"):
        speculative_decode_batch(target, target, [[3, 4, 5]], 2, 4, drafter=PromptLookup(2))
    with pytest.raises(ValueError, match="not both"):
        speculative_decode_batch(target, None, [[3, 4, 5]], 2, 4)


def test_run_with_a_lookup_drafter_records_what_does_not_apply(target, tmp_path, capsys):
    """run_experiment with prompt lookup: no draft model, no capture, the loops skipped with their
    reasons in run.json; the progress lines count each token once (the last reads total/total); a
    run directory of the draft model cannot be resumed with the drafter (another setting)."""
    import json
    import re

    from spectheory.validate.experiment import load_run, run_experiment
    from spectheory.validate.prompts import Prompt
    rng = np.random.default_rng(5)
    texts = _repetitive_prompts(rng, 3)
    ps = [Prompt(f"p{i}", "code", "", ()) for i in range(3)]
    enc = {p.name: t for p, t in zip(ps, texts)}
    run_experiment(tmp_path / "r", target, None, ps, lambda p: enc[p.name], gammas=(2, 3), max_new_tokens=10,
                   progress=True, batch=2, families=["se", "kseq"], control_prompts={"sd": ps[:1]},
                   drafter=PromptLookup(3))
    out = capsys.readouterr().out
    counts = [tuple(map(int, m)) for m in re.findall(r"(\d+)/(\d+) tokens", out)]
    assert counts and counts[-1][0] == counts[-1][1] and all(a <= b for a, b in counts)
    assert "kseq: does not apply" in out and "capture: does not apply" in out
    cfg = json.loads((tmp_path / "r" / "run.json").read_text())
    assert cfg["drafter"]["kind"] == "prompt-lookup" and cfg["families"] == []
    assert set(cfg["not_applicable"]) == {"se", "kseq", "capture"}
    run = load_run(tmp_path / "r")
    assert run.traces == [] and sorted(run.sd) == [2, 3] and len(run.controls[3]) == 1
    with pytest.raises(ValueError, match="drafter"):
        run_experiment(tmp_path / "r", target, tiny_model(seed=1, noise=0.06), ps, lambda p: enc[p.name],
                       gammas=(2,), max_new_tokens=10, progress=False)
