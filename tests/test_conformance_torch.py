"""Torch paths of spectheory.conformance (skipped when torch is absent): tensors in/out with
the random source routed into torch.rand_like/multinomial, and a torch.nn.Module fake LM with
``.logits`` driving a decoding step. Optional: ``transformers``' own sampler (the README's
worked example) when transformers is installed."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spectheory import conformance as sc  # noqa: E402


def torch_verifier(p_logits, q_logits, draft, rng):
    """Standard speculative sampling on batched torch logits, float-safe (u < ratio, guarded
    residual), drawing with torch.rand / torch.multinomial."""
    p = p_logits[0].softmax(-1)
    q = q_logits[0].softmax(-1)
    d = draft[0]
    gamma = d.shape[0]
    for i in range(gamma):
        x = int(d[i])
        if torch.rand(()) < torch.clamp(p[i, x] / q[i, x], max=1.0):
            continue
        r = torch.clamp(p[i] - q[i], min=0)
        r = r if r.sum() > 0 else p[i]
        return torch.cat([d[:i], torch.multinomial(r / r.sum(), 1)])
    return torch.cat([d, torch.multinomial(p[gamma], 1)])


def test_torch_block_verifier_holds():
    r = sc.check_block_verifier(torch_verifier, adapter="logits", dtype="float32", batched=True,
                                framework="torch", n=6000, instances=("markov1-V3-mix0.4",), gammas=(2,),
                                controls=False)
    # no token has p = 0 on markov1-V3-mix0.4: the impossible-token check has nothing to test there
    assert {c["id"]: c["verdict"] for c in r["claims"]} == {
        c["id"]: "not-checkable" if c["id"] == "conformance.impossible_tokens" else "holds" for c in r["claims"]}
    assert r["verdicts"]["lossless"]["verdict"] == r["verdicts"]["standard"]["verdict"] == "holds"
    assert torch.get_num_threads() >= 1


def test_torch_module_fake_lm_decoding_step():
    from spectheory import instances as inst
    pair = inst.get("markov1-V3-mix0.4")
    lm = sc.markov_torch_lm(pair.target)
    out = lm(torch.tensor([[0, 2, 1]])).logits
    assert isinstance(lm, torch.nn.Module) and out.shape == (1, 3, 3)
    np.testing.assert_allclose(out[0, 1].exp().numpy(), pair.target.conditional(2), rtol=1e-6)

    def make_step(target_lm, draft_lm, gamma, rng):
        def step(context):
            ids = torch.tensor([context])
            draft, qs = [], []
            for _ in range(gamma):
                q = draft_lm(torch.cat([ids, torch.tensor([draft], dtype=torch.long)], 1)).logits[0, -1].softmax(-1)
                qs.append(q)
                draft.append(int(sc.inverse_cdf(q.double().numpy(), rng.random())))
            full = torch.cat([ids, torch.tensor([draft], dtype=torch.long)], 1)
            p_logits = target_lm(full).logits[:, ids.shape[1] - 1:]
            return sc.references.reference_verifier(p_logits[0].softmax(-1).double().numpy(),
                                                    torch.stack(qs).double().numpy(), draft, rng)
        return step

    r = sc.check_decoding_step(make_step, lm="torch", n=7000, instances=("markov1-V3-mix0.4",), gammas=(2,),
                               controls=False)
    assert {c["verdict"] for c in r["claims"]} == {"holds", "not-checkable"}, [(c["id"], c["verdict"]) for c in
                                                                               r["claims"]]
    assert r["verdicts"]["lossless"]["verdict"] == "holds"


def test_transformers_speculative_sampling():
    """Worked example (README): Hugging Face transformers' `_speculative_sampling`. Its
    statistics hold; two boundary probes fail (found with transformers 5.23.0): it accepts on
    `r_i <= probability_ratio`, so u = 0 accepts a drafted token with p = 0, and it divides a
    zero-mass residual (p ≤ q after float32 softmax), so torch.multinomial raises on NaN."""
    pytest.importorskip("transformers")
    from spectheory.conformance.examples import transformers_sampler
    r = sc.check_block_verifier(transformers_sampler, adapter="logits", dtype="float32", batched=True,
                                framework="torch", n=6000, instances=("markov1-V3-mix0.4",), gammas=(2,),
                                controls=False)
    verdicts = {c["id"]: c["verdict"] for c in r["claims"]}
    assert all(v == "holds" for k, v in verdicts.items() if not k.endswith("probes")
               and k != "conformance.impossible_tokens"), verdicts
    assert r["verdicts"]["lossless"]["verdict"] == "fails" and r["warnings"] == []
    probes = {e["instance"]: e for e in next(c for c in r["claims"]
                                             if c["id"] == "conformance.support_probes")["evidence"]}
    assert probes["p=0 drafted token, u=0"]["outcome"] == "fail"
    zero_mass = [e for name, e in probes.items() if "zero-mass residual" in name]
    assert zero_mass and all(e["outcome"] == "fail" and "nan" in e["note"] for e in zero_mass)
    assert all("transformers/generation/utils.py" in e["note"] for e in zero_mass)  # where it raised
    assert probes["one-token vocabulary, u=1−ulp"]["outcome"] == "pass"
