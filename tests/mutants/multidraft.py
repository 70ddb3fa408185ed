"""Plausible bugs in the multi-draft family; each must be caught by tests/test_multidraft_*.py
or by ``spectheory verify --quick --claims 'kseq.*,gbv.*,spectr_gbv.*'`` (a verdict or a
control verdict changes)."""

CLAIMS = "kseq.*,gbv.*,spectr_gbv.*"

MUTANTS = [
    dict(path="spectheory/closed_forms/multidraft.py", old="        num = Wc - W(Pi, Qi, e)\n",
         new="        num = Wc\n", why="Eq. 2 numerator without the parent term −p(x^i)(1−m(x^i))^K"),
    dict(path="spectheory/closed_forms/multidraft.py", old="    return 1.0 - (1.0 - np.asarray(Q, float)) ** K",
         new="    return 1.0 - np.asarray(Q, float) ** K",
         why="P(some draft has x^i) written as 1 − q^K (wrong complement)"),
    dict(path="spectheory/closed_forms/multidraft.py",
         old="np.maximum(1.0 - Q / np.where(P > 0, P, 1.0), 0.0)",
         new="np.maximum(1.0 - np.where(P > 0, P, 1.0) / np.where(Q > 0, Q, 1.0), 0.0)",
         why="seed letters left untranslated: m = min(p/q, 1) instead of min(q/p, 1)"),
    dict(path="spectheory/closed_forms/multidraft.py",
         old="    w = np.maximum(p - rho * q, 0.0)",
         new="    w = np.maximum(p - q, 0.0)",
         why="K-SEQ residual without ρ (plain SD residual)"),
    dict(path="spectheory/closed_forms/multidraft.py",
         old="    return float(sum(A(tree.P[i], tree.Q[i], K).sum() for i in range(1, tree.gamma + 1)))",
         new="    return float(sum(A(tree.P[i], tree.Q[i], K).sum() for i in range(1, tree.gamma)))",
         why="off-by-one: Lemma 5.1's sum misses the full block i = γ"),
    dict(path="spectheory/exact/multidraft.py", old="                    key = (int(x), cand.count(x))",
         new="                    key = (int(x), n)", why="K-SEQ keeps every draft alive, not those carrying the accepted token"),
    dict(path="spectheory/exact/multidraft.py", old="        depth = tau + 1 + j\n        codes",
         new="        depth = tau + j\n        codes", why="Alg. 2 modification read one level too shallow"),
    dict(path="spectheory/exact/multidraft.py", old="                            nxt.append((ta, tc, HH | {node}, ww * (1.0 - hi)))",
         new="                            nxt.append((ta, tc, HH, ww * (1.0 - hi)))",
         why="rejected sub-blocks never recorded in H (line 8 dropped)"),
    dict(path="spectheory/_kernels/multidraft.py", old="                depth = tau + 1 + j\n",
         new="                depth = tau + j\n", why="kernel: Alg. 2 modification one level too shallow"),
    dict(path="spectheory/_kernels/multidraft.py", old="                n = c\n", new="                n = K\n",
         why="kernel K-SEQ: all drafts stay alive after an acceptance"),
    dict(path="spectheory/_kernels/multidraft.py", old="                    wbuf[x] = _w(Pj[ch], Qj[ch], e)\n                    tot += wbuf[x]\n                if tot <= 0.0:",
         new="                    wbuf[x] = _w(Pj[ch], Qj[ch], 1)\n                    tot += wbuf[x]\n                if tot <= 0.0:",
         why="kernel: Eq. 4 residual with (1 − m)^1 instead of (1 − m)^K"),
    dict(path="spectheory/closed_forms/optimum.py", old="    order = np.argsort(pk / qk, kind=\"stable\")",
         new="    order = np.argsort(qk / pk, kind=\"stable\")", why="γ = 1 optimum: tokens sorted by the inverse ratio"),
    dict(path="spectheory/verifiers/multidraft.py", old="        Wc = cf.W(P[:, i, None] * p[:, i], Q[:, i, None] * q[:, i], e).sum(axis=1)",
         new="        Wc = cf.W(P[:, i, None] * p[:, i - 1], Q[:, i, None] * q[:, i - 1], e).sum(axis=1)",
         why="verifier: Eq. 2's extension sum uses the previous position's rows (wrong row)"),
]
