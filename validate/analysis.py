"""Theory against measurement on a validation run, per prompt category and γ.

Theory (from the captured traces of the target's own text, exact statistics; in a row with SD
records, the traces of the prompts SD ran on, so that theory and measurement share their prompts —
a run may capture more prompts than it decodes, e.g. for H-RAD; every captured prompt where SD did
not run):
  α̂ = mean_t β_t; closed form (1 − α̂^{γ+1})/(1 − α̂) (Leviathan Eq. 1); the trace-exact
  tokens 1 + Σ_k Π_{j<k} β_{t+j} (:func:`spectheory.validate.replay.trace_exact_tokens`).
Measurement (real speculative decoding): tokens per iteration τ + 1, first-draft acceptance,
and wall time.

Cost model. The paper's (Thm 3.8) charges c = t_draft / t_target(1) per draft token and one
target call per iteration: speedup = E[tokens]/(γc + 1). The measured profile charges what the
calls cost here: γ draft calls t_draft plus one target call scoring k = γ + 1 tokens,
t_target(γ + 1), against t_target(1) per autoregressive token:
  speedup = E[tokens] · t_target(1) / (γ·t_draft + t_target(γ+1) + t_verify).
Measured speedup: autoregressive seconds per token (a one-token target forward on the
committed context, timed beside the SD calls every k-th SD iteration: SDRun.ar_probe_s; the
capture's one-token forwards if there are no probes) divided by speculative seconds per
emitted token (all draft and target calls plus the verifier, prompt prefill excluded on both
sides).
"""
from __future__ import annotations

import math

import numpy as np

from spectheory.closed_forms.sd import expected_tokens

from .replay import trace_exact_tokens


def _mean_se(x):
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return float("nan"), float("nan"), 0
    se = float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else float("nan")
    return float(x.mean()), se, int(x.size)


def cost_profile(traces, sd_runs) -> dict:
    """Mean call seconds: target one-token (autoregressive), draft one-token, target call by
    number of tokens scored, verifier."""
    from .specdec import SDRun
    from .trace import CompactTrace
    for nm, seq, cls in (("traces", traces, CompactTrace), ("sd_runs", sd_runs, SDRun)):
        if isinstance(seq, (str, bytes)) or not hasattr(seq, "__iter__") \
                or not all(isinstance(x, cls) for x in seq):
            raise TypeError(f"{nm} must be a list of {cls.__name__}, got {seq!r:.60}")
    probes = np.concatenate([r.ar_probe_s for r in sd_runs]) if sd_runs else np.zeros(0)
    if np.isfinite(probes).any():
        # every time from the SD runs: timed together, under the same machine conditions
        t1 = probes
        d1 = np.concatenate([r.draft_call_s.ravel() for r in sd_runs])
    else:
        t1 = np.concatenate([t.target_call_s for t in traces]) if traces else np.zeros(0)
        d1 = np.concatenate([t.draft_call_s for t in traces] + [r.draft_call_s.ravel() for r in sd_runs]) \
            if (traces or sd_runs) else np.zeros(0)
    by_k: dict = {}
    for r in sd_runs:
        for k, s in zip(r.target_call_k, r.target_call_s):
            by_k.setdefault(int(k), []).append(float(s))
    ver = np.concatenate([r.verify_s for r in sd_runs]) if sd_runs else np.zeros(0)
    return {
        "target_1": _mean_se(t1)[0], "target_1_n": _mean_se(t1)[2],
        "draft_1": _mean_se(d1)[0], "draft_1_n": _mean_se(d1)[2],
        "target_k": {k: float(np.mean(v)) for k, v in sorted(by_k.items())},
        "target_k_n": {k: len(v) for k, v in sorted(by_k.items())},
        "verify": _mean_se(ver)[0],
    }


def _matched(traces, sd_runs) -> list:
    """The traces of the prompts the SD records ran on (by prompt name), or every trace when SD did
    not run or none of its prompts was captured."""
    names = {r.meta.get("name") for r in sd_runs} - {None}
    same = [t for t in traces if t.meta.get("name") in names]
    return same if same else list(traces)


def summarize(run) -> list[dict]:
    """One row per (category, γ), plus category ``all``; see the module docstring."""
    from .experiment import check_run
    check_run(run)
    rows = []
    cats = run.categories + (["all"] if len(run.categories) > 1 else [])
    for cat in cats:
        captured = [t for t in run.traces if cat == "all" or t.category == cat]
        gammas = sorted(set(run.sd) | set(run.config.get("gammas", [])))
        for g in gammas:
            sds = [r for r in run.sd.get(g, []) if cat == "all" or r.meta.get("category") == cat]
            trs = _matched(captured, sds)
            beta = np.concatenate([t.beta for t in trs]) if trs else np.zeros(0)
            a_hat, a_se, n_pos = _mean_se(beta)
            prof = cost_profile(trs, sds)
            row = dict(category=cat, gamma=g, n_prompts=len(trs), n_positions=n_pos, alpha_capture=a_hat,
                       alpha_capture_se=a_se)
            row["tokens_closed_form"] = float(expected_tokens(a_hat, g)) if n_pos else float("nan")
            ex = [trace_exact_tokens(t.beta, g) for t in trs if t.T >= g]
            row["tokens_trace_exact"] = float(np.concatenate(ex).mean()) if ex else float("nan")
            if sds:
                tpi = np.concatenate([r.tokens_per_iteration for r in sds])
                row["tokens_measured"], row["tokens_measured_se"], row["n_iterations"] = _mean_se(tpi)
                cond = np.concatenate([r.conditional_tokens()[0] for r in sds])
                row["tokens_given_drafts"] = float(cond.mean())
                first = np.concatenate([r.tau >= 1 for r in sds]).astype(float)
                row["accept_first_measured"] = float(first.mean())
                row["alpha_on_policy"] = float(np.concatenate([r.beta[:, 0] for r in sds]).mean())
                row["tokens_closed_form_on_policy"] = float(expected_tokens(row["alpha_on_policy"], g))
                sd_s = sum(r.seconds for r in sds)
                n_tok = int(sum(r.emitted.sum() for r in sds))
                row["sd_s_per_token"] = sd_s / max(n_tok, 1)
                row["sd_tokens"] = n_tok
            else:
                for k in ("tokens_measured", "tokens_measured_se", "tokens_given_drafts", "accept_first_measured",
                          "alpha_on_policy", "tokens_closed_form_on_policy", "sd_s_per_token"):
                    row[k] = float("nan")
                row["n_iterations"] = row["sd_tokens"] = 0
            t1, td = prof["target_1"], prof["draft_1"]
            tk = prof["target_k"].get(g + 1, float("nan"))
            row.update(t_target_1=t1, t_draft=td, t_target_verify=tk, t_verify=prof["verify"],
                       c=td / t1 if t1 else float("nan"), verify_cost_ratio=tk / t1 if t1 else float("nan"))
            row["speedup_paper"] = row["tokens_closed_form"] / (g * row["c"] + 1)
            denom = g * td + tk + (prof["verify"] if np.isfinite(prof["verify"]) else 0.0)
            row["speedup_profile"] = row["tokens_closed_form"] * t1 / denom
            row["speedup_profile_measured_tokens"] = row["tokens_measured"] * t1 / denom
            row["speedup_measured"] = t1 / row["sd_s_per_token"] if row["n_iterations"] else float("nan")
            rows.append(row)
    return rows
