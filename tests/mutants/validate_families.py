"""Plausible bugs in the family replays on compact traces (validate/replay_{se,ersd,multidraft}.py
``logits_evidence`` and validate/lumping.py); tests/test_validate_families.py must catch them."""

CLAIMS = None  # logits evidence needs a run directory; `verify --quick` alone does not reach it
TESTS = "tests/test_validate_families.py"

MUTANTS = [
    dict(path="validate/replay_se.py",
         old="lam * qrest + (1 - lam) * (beta - bslice)",
         new="lam * qrest + (1 - lam) * beta",
         why="leftover share of α counts the whole β instead of β − β_slice (slice counted twice)"),
    dict(path="validate/replay_se.py",
         old="x = sample_lumped(Q, n, rng)",
         new="x = sample_lumped(P, n, rng)",
         why="proposals drawn from the target instead of the draft q"),
    dict(path="validate/replay_ersd.py",
         old="e_lo[t] = np.sum(num / (den + p_rest[t] * qk + q_rest[t] * pk))",
         new="e_lo[t] = np.sum(num / (den + np.maximum(p_rest[t] * qk, q_rest[t] * pk)))",
         why="lower bracket of E uses the smallest leftover denominator (max instead of sum)"),
    dict(path="validate/replay_ersd.py",
         old='"exact_hi": e_hi + np.maximum(rest, 0.0)',
         new='"exact_hi": e_hi',
         why="upper bracket of E forgets the leftover tokens' own terms (≤ β − β_slice)"),
    dict(path="validate/replay_multidraft.py",
         old='"optimum_lo": np.maximum(opt_hi - K * st["q_rest"], 0.0)',
         new='"optimum_lo": np.maximum(opt_hi - st["q_rest"], 0.0)',
         why="lower bracket of the K-draft optimum drops the Lipschitz constant K of x^K"),
    dict(path="validate/lumping.py",
         old="Ps, Qs = zip(*(t.lumped() for t in traces))",
         new="Qs, Ps = zip(*(t.lumped() for t in traces))",
         why="lumped p and q swapped (target and draft exchanged)"),
]
