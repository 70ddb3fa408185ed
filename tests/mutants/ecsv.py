"""Plausible bugs in the ECSV family; each must be caught by tests/test_ecsv_*.py (the
fast tier restricted to the family's files) or by ``spectheory verify --quick --claims
'ecsv.*'`` (a verdict or a control verdict changes)."""

CLAIMS = "ecsv.*"
TESTS = ("tests/test_ecsv_exact.py tests/test_ecsv_kernel.py tests/test_ecsv_closed_forms.py "
         "tests/test_ecsv_verifier.py tests/test_ecsv_notebook.py")

CLAIMS_TESTS = TESTS + " tests/test_ecsv_readings.py tests/test_ecsv_claims.py"
C = "sims/claims/ecsv.py"
K = "spectheory/_kernels/ecsv.py"
EX = "spectheory/exact/ecsv.py"

MUTANTS = [
    # --- kernel: reliability signals and weights ---
    dict(path=K, old="                agr = same / (B - 1) if B > 1 else 0.0",
         new="                agr = same / B",
         why="kernel: agreement as a fraction of all B branches instead of the B − 1 others (a branch "
             "counting itself would only shift every r by a constant, which cancels in exp/argmax)"),
    dict(path=K, old="W.r[b, j] = T.a_ent * (-T.q_ent[row])", new="W.r[b, j] = T.a_ent * (T.q_ent[row])",
         why="kernel: entropy enters the reliability with the wrong sign (u = +H instead of −H)"),
    dict(path=K, old="            W.w[b, j] = np.exp(T.gamma * W.r[b, j] - zmax)",
         new="            W.w[b, j] = np.exp(W.r[b, j] - zmax)",
         why="kernel: positionwise weights exp(r) without γ (γ only in the shift)"),
    dict(path=K, old="            z = T.gamma * (m / d)", new="            z = T.gamma * m",
         why="kernel: branchwise reliability summed over positions instead of averaged"),
    # --- kernel: fusion ---
    dict(path=K, old="            W.tied[best] = True\n            W.cand[best] = True\n",
         new="            W.tied[best] = True\n",
         why="kernel: the top-M tokens of q̄ never join the candidates"),
    dict(path=K, old="                W.tied[t] = W.tied[t] and W.qbar[j, t] >= km - _tol(km)",
         new="                W.tied[t] = W.tied[t]",
         why="kernel: ties not broken by q̄ (smallest id wins)"),
    dict(path=K, old="                W.score[t] += wl * T.q_rows[row, t]",
         new="                W.score[t] += T.lam * T.q_rows[row, t]",
         why="kernel: soft vote Σ_b λ q_b(t) without the branch weights"),
    # --- kernel: spot checks ---
    dict(path=K, old="        s = (s * V + W.fused0[j]) % S", new="        s = (s * V + W.tok[0, j]) % S",
         why="kernel: spot-check rows read along branch 1 instead of the first-pass fused prefix"),
    dict(path=K, old="            prow = T.p_ros[s]\n            W.spot_row[j] = prow",
         new="            prow = T.p_ros[s0]\n            W.spot_row[j] = prow",
         why="kernel: every spot check reads the verifier's row at the step's start state (the "
             "−log p(second best) term itself is a per-position constant: dropping it changes nothing)"),
    dict(path=K, old="            if best < 0 or k1 > b1 or (k1 == b1 and k2 > b2):",
         new="            if best < 0 or k1 < b1 or (k1 == b1 and k2 > b2):",
         why="kernel: spot checks at the least disagreeing positions"),
    # --- kernel: verification and costs ---
    dict(path=K, old="                    qx += T.q_rows[T.q_ros[W.bst[b, j]], x]",
         new="                    qx += T.q_rows[T.q_ros[W.bst[0, j]], x]",
         why="kernel rs reading: q̄(t*) read from branch 1's row B times"),
    dict(path=K, old="                        if v < 0.0:\n                            v = 0.0\n",
         new="",
         why="kernel rs reading: residual p − q̄ not clipped at 0"),
    dict(path=K, old="    if T.verify == V_GREEDY:\n        return T.p_top[prow]\n",
         new="",
         why="kernel greedy regime: the verifier samples instead of taking its argmax"),
    dict(path=K, old="        cost_seq = float(T.R + tau + 1) if T.kind != KIND_ORACLE else cost_par\n        return tau, tau + 1",
         new="        cost_seq = float(tau + 1) if T.kind != KIND_ORACLE else cost_par\n        return tau, tau + 1",
         why="kernel: sequential accounting forgets the spot checks after a mismatch"),
    dict(path=K, old="    B, d = T.B, T.d\n    n = 1\n", new="    B, d = T.B, T.d\n    n = 0\n",
         why="kernel: token-tree cost without the root position"),
    dict(path=K, old="                pr *= T.p_rows[T.p_ros[W.bst[b, j]], W.tok[b, j]]",
         new="                pr *= T.q_rows[T.q_ros[W.bst[b, j]], W.tok[b, j]]",
         why="kernel Oracle-Top1: branches ranked by the drafter's probability, not the verifier's"),
    dict(path=K, old="                    else:\n                        W.alive[b] = False\n", new="",
         why="kernel SD-multi: branches that mismatch are never pruned from the token tree"),
    dict(path=K, old="    prow = T.p_ros[s]\n    y = _sample_p(st, T, prow)\n    W.emit[d] = y",
         new="    prow = T.p_ros[s0]\n    y = _sample_p(st, T, prow)\n    W.emit[d] = y",
         why="kernel: the bonus token drawn from the verifier's row at the step's start state"),
    # --- exact engine ---
    dict(path=EX, old="        agr = ((tok[:, :, None, :] == tok[:, None, :, :]).sum(axis=2) - 1) / (B - 1)",
         new="        agr = ((tok[:, :, None, :] == tok[:, None, :, :]).sum(axis=2) - 1) / B",
         why="exact: agreement as a fraction of all B branches instead of the B − 1 others"),
    dict(path=EX, old="                res = np.maximum(P[:, j] - qprop[:, j], 0.0)",
         new="                res = np.abs(P[:, j] - qprop[:, j])",
         why="exact rs readings: residual |p − q| instead of max(p − q, 0)"),
    dict(path=EX, old="        den = Fj[pre][:, None]", new="        den = F.sum()",
         why="exact rs_exact: proposal rows are joint masses, not conditionals given the fused prefix"),
    dict(path=EX, old="    cost_seq = cost_par if m.kind == \"oracle\" else seq_extra + e_tau + 1.0",
         new="    cost_seq = cost_par if m.kind == \"oracle\" else e_tau + 1.0",
         why="exact: sequential accounting without the spot checks"),
    # --- rules, tables, closed forms, verifier ---
    dict(path="spectheory/rules/ecsv.py", old="        return r, k - r\n", new="        return r, k - r + 1\n",
         why="budget rule forgets the bonus position: R + d + 1 = k + 2 > SD-1's k + 1"),
    dict(path="spectheory/rules/ecsv.py", old="        z = z / self.temperature\n", new="        z = z * self.temperature\n",
         why="drafter temperature applied as a multiplier"),
    dict(path="spectheory/montecarlo/ecsv.py", old='branchwise=m.scope == "branch"', new='branchwise=m.scope == "position"',
         why="MC tables: positionwise and branchwise weights swapped"),
    dict(path="spectheory/montecarlo/ecsv.py", old='"improves": bool(z_acc > zc and z_ce > zc)',
         new='"improves": bool(z_acc > zc or z_ce > zc)',
         why="decision rule 1: 'improves both' read as 'improves either'"),
    dict(path="spectheory/closed_forms/ecsv.py", old="    return np.log((1.0 - e) * (V - 1) / e)",
         new="    return np.log((1.0 - e) / e)", why="MAP weights without the (V − 1) factor"),
    dict(path="spectheory/closed_forms/ecsv.py", old="    order = sorted(range(V), key=lambda t: (-q[t], t))",
         new="    order = sorted(range(V), key=lambda t: (q[t], t))",
         why="drafting-model vote: ties broken toward the smaller q"),
    dict(path="spectheory/verifiers/ecsv.py", old="    rows = {j: _row(p, tuple(first[:j]), V) for j in spot}",
         new="    rows = {j: _row(p, tuple(first[:j + 1]), V) for j in spot}",
         why="verifier: spot row one position too deep"),
    # --- claims layer and real-logits replay ---
    dict(path=C, old='    outcome = "pass" if count >= 1 else ("underpowered" if undetermined else "fail")',
         new='    outcome = "pass" if count >= 0 else ("underpowered" if undetermined else "fail")',
         why="claims: an 'exists' part passes with zero configurations", tests=CLAIMS_TESTS),
    dict(path=C, old="            n += (e[\"accepted_length\"] > s1[\"accepted_length\"] + 1e-9) and "
                     "(e[\"ce_per_token\"] < s1[\"ce_per_token\"] - 1e-9)",
         new="            n += (e[\"accepted_length\"] > s1[\"accepted_length\"] + 1e-9) or "
             "(e[\"ce_per_token\"] < s1[\"ce_per_token\"] - 1e-9)",
         why="claims, exact rule 1: 'improves both' read as 'improves either'", tests=CLAIMS_TESTS),
    dict(path=C, old="    return sets[np.arange(y.size), y] / sets.sum(axis=1)\n\n\ndef _map_scope",
         new="    return sets[np.arange(y.size), y].astype(float)\n\n\ndef _map_scope",
         why="claims, channel draws: a tie counts as a win for every tied token", tests=CLAIMS_TESTS),
    dict(path=C, old="        ms = tuple(replace(m, gamma=-8.0, alpha=(0.0, 1.0, 1.0, 0.0), lam=0.0, ties=\"none\") for m in ms)",
         new="        ms = tuple(replace(m, gamma=8.0, alpha=(0.0, 1.0, 1.0, 0.0), lam=0.0, ties=\"none\") for m in ms)",
         why="claims: the anti-reliability control's γ sign lost (it becomes a reliable vote)", tests=CLAIMS_TESTS),
    dict(path=C, old="        if e.mean() >= 0.5:", new="        if e.mean() >= 0.6:",
         why="claims, majority scope: sentence 2's premise ε < ½ loosened to ε < 0.6", tests=CLAIMS_TESTS),
    dict(path=C, old="        if ev.outcome == \"fail\" and abs(measured - claimed) <= 1e-12:",
         new="        if ev.outcome == \"fail\":",
         why="claims: every strict-inequality failure labelled a tie, a strict loss included", tests=CLAIMS_TESTS),
    dict(path=C, old="                            f\"(spectheory.rules.ecsv.SD_1, {method_call(lite)})]\", \"src\": src.name})",
         new="                            \"(spectheory.rules.ecsv.SD_1, spectheory.rules.ecsv.ECSV_LITE)]\", \"src\": src.name})",
         why="claims: the rule-1 counterexample's call rebuilds the untuned ECSV-lite (0.9009, not the printed 0.9076)",
         tests=CLAIMS_TESTS),
    dict(path="validate/replay_ecsv.py", old="    return np.cumprod(beta[pos], axis=1).sum(axis=1)",
         new="    return np.cumprod(beta[pos], axis=1).sum(axis=1) + 1.0",
         why="replay: SD-1's accepted length counts the bonus token (τ + 1 instead of τ)", tests=CLAIMS_TESTS),
    dict(path="validate/replay_ecsv.py", old="    return np.where(fused == leftover, 0.0, pf)",
         new="    return np.where(fused == leftover, 1.0, pf)",
         why="replay: a fused leftover pseudo-token counted as a sure match", tests=CLAIMS_TESTS),
]

