"""Plausible bugs in the SpecBranch (sb) family; each must be caught by tests/test_sb_*.py (the
fast tier) or by ``spectheory verify --quick --claims 'sb.*'`` (a verdict or a control verdict
changes)."""

CLAIMS = "sb.*"
TESTS = ("tests/test_sb_closed_forms.py tests/test_sb_exact.py tests/test_sb_mc.py tests/test_sb_hrad.py "
         "tests/test_sb_verifier.py tests/test_sb_notebook.py tests/test_bad_inputs.py")

MUTANTS = [
    # --- rules ---
    dict(path="spectheory/rules/sb.py", old="np.floor(k_max * (1.0 - c) + 1e-12)",
         new="np.ceil(k_max * (1.0 - c))", why="wrong k formula: ⌈k_max(1 − q)⌉ instead of ⌊k_max(1 − q)⌋"),
    dict(path="spectheory/rules/sb.py", old="np.floor(k_max * (1.0 - c) + 1e-12)",
         new="np.floor(k_max * c + 1e-12)", why="k grows with the draft's confidence instead of its uncertainty"),
    # --- closed forms ---
    dict(path="spectheory/closed_forms/sb.py", old="return _out(np.maximum(g, cc) / geom_sum(a, g) + g * (1.0 - a))",
         new="return _out(np.maximum(g, cc) / geom_sum(a, g))",
         why="Theorem 1 without the serial redraft after a rejection (rollback cost forgotten)"),
    dict(path="spectheory/closed_forms/sb.py", old="return _out(np.maximum(g, cc) / geom_sum(a, g) + g * (1.0 - a))",
         new="return _out(np.maximum(g, cc) / geom_sum(a, g + 1) + g * (1.0 - a))",
         why="off-by-one: PSD rounds credited with a bonus token (S_{γ+1} tokens)"),
    dict(path="spectheory/closed_forms/sb.py", old="return _out(np.maximum(g, cc) * (1.0 + a - a ** g) / geom_sum(a, g))",
         new="return _out(np.maximum(g, cc) * (1.0 + a - a ** (g - 1)) / geom_sum(a, g))",
         why="PEARL closed form with the stationary weight of a γ − 1 block off by one"),
    dict(path="spectheory/closed_forms/sb.py", old="return _out((g + _c(c)) / geom_sum(alpha, g + 1))",
         new="return _out((g + _c(c)) / geom_sum(alpha, g))", why="SpS latency without the bonus token"),
    dict(path="spectheory/closed_forms/sb.py", old="    pmf[g] = a ** g\n",
         new="    pmf[g] = a ** (g + 1)\n", why="truncated geometric: last atom α^{γ+1} (off by one)"),
    dict(path="spectheory/closed_forms/sb.py", old="    if g(cc) <= 0.0:\n        return cc\n",
         new="    if g(cc) <= 0.0:\n        return float(np.ceil(cc)) + 1.0\n",
         why="minimiser past c when the root is beyond c (wrong end point)"),
    # --- exact engine ---
    dict(path="spectheory/exact/sb.py", old="corr += w * np.where(inb, 0.0, p)",
         new="corr += w * np.where(inb, 0.0, q)", why="match rule: correction drawn from q instead of p (wrong row)"),
    dict(path="spectheory/exact/sb.py", old="        d = np.maximum(pc - qi, 0.0)\n        if d.sum() > 0:\n            pc = d / d.sum()",
         new="        d = np.maximum(p - qi, 0.0)\n        if d.sum() > 0:\n            pc = d / d.sum()",
         why="recursive rejection: residual recomputed from the original p at every branch"),
    dict(path="spectheory/exact/sb.py", old="            qi = qi / qi.sum()\n", new="",
         why="recursive rejection without replacement: q not renormalised after removing tried branches"),
    dict(path="spectheory/exact/sb.py", old="rolled_back=(Em - j) + g, unused=cap - Em",
         new="rolled_back=(Em - j), unused=cap - Em",
         why="exact rollback count forgets the overlapped path invalidated by a block rejection"),
    dict(path="spectheory/exact/sb.py", old='                        out.add(t + (y,), ("E", a2), py, r)',
         new='                        out.add(t + (y,), ("R", a2, a2), py, r)',
         why="exact PSD: no serial redraft after a rejection (the overlapped draft treated as valid)"),
    dict(path="spectheory/exact/sb.py", old="        return np.maximum(busy, float(g)), busy",
         new="        return busy + float(g), busy", why="pipeline round time serial (γ + c) instead of overlapped max(γ, c)"),
    dict(path="spectheory/exact/sb.py", old="    for k in range(gamma):\n        out[:, k] = v @ rej\n",
         new="    for k in range(gamma):\n        out[:, k] = rej\n", why="chain DP of τ without the acceptance matrix powers"),
    # --- kernel ---
    dict(path="spectheory/_kernels/sb.py", old="        if T.keep_overlap:\n            st[1] = w\n            st[2] = g\n            st[3] = 2\n        else:\n            st[1] = a2\n            st[2] = 0\n            st[3] = 0\n",
         new="        if T.keep_overlap:\n            st[1] = w\n            st[2] = g\n            st[3] = 2\n        else:\n            st[1] = a2\n            st[2] = g - 1\n            st[3] = 2\n",
         why="kernel: overlapped draft kept after a block rejection (PEARL/SpecBranch)"),
    dict(path="spectheory/_kernels/sb.py", old="        ok = u[base + KM] < T.acc[xa, h]",
         new="        ok = u[base] < T.acc[xa, h]", why="kernel: the head's acceptance test reuses the uniform that drew it"),
    dict(path="spectheory/_kernels/sb.py", old="        y = _draw(T.rcdf, xa, u[3 * j + 2])\n        out[n] = y\n        n += 1\n        w = T.nxt[xw, c]",
         new="        y = _draw(T.pcdf, xa, u[3 * j + 2])\n        out[n] = y\n        n += 1\n        w = T.nxt[xw, c]",
         why="kernel: correction after a block rejection drawn from p, not the residual"),
    dict(path="spectheory/_kernels/sb.py", old="            a = p[y] / (rho * q[y])",
         new="            a = p[y] / q[y]", why="kernel K-SEQ: branch test without ρ"),
    dict(path="spectheory/_kernels/sb.py", old="            B[i] = y\n            removed[y] = True\n            left -= q[y]",
         new="            B[i] = y\n            left -= q[y]", why="kernel: branches 'without replacement' can repeat a token"),
    dict(path="spectheory/_kernels/sb.py", old="        rew[R_RB] = (m - j) + g\n",
         new="        rew[R_RB] = (m - j - 1) + g\n", why="kernel: rolled-back block tail off by one (the rejected token not counted)"),
    dict(path="spectheory/_kernels/sb.py", old="        while dd < 2 and v >= T.pol[a2, dd]:",
         new="        while dd < 2 and v >= T.pol[xa, dd]:",
         why="kernel: H-RAD signal read in the branch point's context, not the survivor's (posterior drafting)"),
    # --- Monte Carlo tables, verifier, H-RAD ---
    dict(path="spectheory/montecarlo/sb.py", old='order = np.argsort(-m.Q, axis=1, kind="stable").astype(np.int64)',
         new='order = np.argsort(m.Q, axis=1, kind="stable").astype(np.int64)',
         why="MC tables: top-k branches taken from the least probable draft tokens"),
    dict(path="spectheory/verifiers/sb.py", old="        b = int(np.argmax(p[B]))",
         new="        b = int(np.argmax(q[B]))", why="verifier (code rule): branch chosen by q instead of p"),
    dict(path="spectheory/hrad.py", old="    y = np.where(tau == gamma - 1, 2, np.where(tau == 0, 0, 1))",
         new="    y = np.where(tau == gamma - 1, 0, np.where(tau == 0, 2, 1))",
         why="H-RAD labels: all-reject and all-accept swapped"),
    dict(path="spectheory/hrad.py", old="    slope = clf.W[-2] / clf.sd[-1]", new="    slope = clf.W[-2]",
         why="H-RAD policy table: the target feature's weight used without undoing the standardisation"),
]
