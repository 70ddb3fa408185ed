"""Mutants of issue 21 item 5's two conformance holes, caught by tests/test_conformance_subchecks.py.

First half: each sub-check of a conformance check silenced (it always passes) while the other
sub-checks of the same check still run — the bug an aggregate verdict hides when another
sub-check fails the same control. Second half: each check's sample shrunk on one built-in
instance (a dropped run or call, an early break, a filter), the evidence still naming a size."""

CLAIMS = None  # the conformance API runs no registered claim: the fast tier must catch these
TESTS = "tests/test_conformance_subchecks.py"

CK = "spectheory/conformance/checks.py"
PR = "spectheory/conformance/probes.py"
MD = "spectheory/conformance/kinds/multidraft.py"
DR = "spectheory/conformance/runs.py"
JS = "spectheory/judge/stats.py"

MUTANTS = [
    # --- (a) one sub-check silenced --------------------------------------------------------------
    dict(path=CK, old="        viol = int((bad_prefix | repeat).sum())",
         new="        viol = 0",
         why="tokens_per_call: the structure row silenced (the law of L still fails no-bonus)"),
    dict(path=CK, old="        viol = int((bad_prefix | repeat).sum())",
         new="        viol = int(bad_prefix.sum())",
         why="tokens_per_call structure: a correction equal to the rejected draft no longer counted"),
    dict(path=CK, old="        viol = int((bad_prefix | repeat).sum())",
         new="        viol = int(repeat.sum())",
         why="tokens_per_call structure: an emitted prefix off the draft no longer counted"),
    dict(path=CK, old='    ev.append(stats.chisquare_gof(label(trace, law="L"), counts, law,',
         new='    ev.append(stats.chisquare_gof(label(trace, law="L"), law * counts.sum(), law,',
         why="tokens_per_call: the law of L silenced (the structure row still fails no-bonus)"),
    dict(path=CK, old="    counts = np.bincount(idx[possible], minlength=pair.V ** N)",
         new="    counts = probs * possible.sum()",
         why="first_tokens silenced: the observed counts replaced by their expectation"),
    dict(path=CK, old="    return stratified_chisquare(label(trace), counts, probs,",
         new="    return stratified_chisquare(label(trace), [p * c.sum() for c, p in zip(counts, probs)], probs,",
         why="token_law_by_state silenced"),
    dict(path=CK, old="    return stats.chisquare_gof(label(trace), counts, probs, alpha=alpha, tolerance_w=TOL_W,\n"
                      "                               note=f\"{which};",
         new="    return stats.chisquare_gof(label(trace), probs * counts.sum(), probs, alpha=alpha, tolerance_w=TOL_W,\n"
             "                               note=f\"{which};",
         why="block_law silenced"),
    dict(path=CK, old="    return stats.chisquare_gof(label(trace), counts, probs, alpha=alpha, tolerance_w=TOL_W,\n"
                      "                               note=f\"{n} bonus",
         new="    return stats.chisquare_gof(label(trace), probs * n, probs, alpha=alpha, tolerance_w=TOL_W,\n"
             "                               note=f\"{n} bonus",
         why="bonus_by_state silenced"),
    dict(path=CK, old="    return stats.per_state_binomial(label(trace), attempts, accepts, pair.acceptance_by_state(),",
         new="    return stats.per_state_binomial(label(trace), attempts, attempts * pair.acceptance_by_state(),\n"
             "                                    pair.acceptance_by_state(),",
         why="acceptance_by_state silenced"),
    dict(path=CK, old="    return stats.z_test_mean(label(trace), float(claimed.mean()), mean=float(tau.mean()), se=se, n=n,",
         new="    return stats.z_test_mean(label(trace), float(claimed.mean()), mean=float(claimed.mean()), se=se, n=n,",
         why="expected_tau silenced"),
    dict(path=PR, old='            support.append(f"position {i}: emitted token {t} has p = 0 ({role_of(i, tau, g)})")',
         new="            pass",
         why="support probes: a p = 0 token no longer a violation (crashes and invalid ids still are)"),
    dict(path=PR, old='        return [f"token id outside [0, {V}): {out}"], []',
         new="        return [], []",
         why="support probes: an id outside the vocabulary no longer a violation"),
    dict(path=PR, old="        support, standard, needed, shown = [crash[\"violation\"]], [crash[\"violation\"]], None, \"—\"",
         new="        support, standard, needed, shown = [], [crash[\"violation\"]], None, \"—\"",
         why="support probes: a crash no longer a violation"),
    dict(path=PR, old="        support, standard, needed, shown = [crash[\"violation\"]], [crash[\"violation\"]], None, \"—\"",
         new="        support, standard, needed, shown = [crash[\"violation\"]], [], None, \"—\"",
         why="standard probes: a crash reads pass there (issue 35: a crashed probe is never a pass)"),
    dict(path=PR, old="    if tuple(out[:tau]) != tuple(draft[:tau]):",
         new="    if False:",
         why="standard probes: an emitted prefix off the draft no longer a violation"),
    dict(path=PR, old="    if probe.must_reject and tau > 0:",
         new="    if False:",
         why="standard probes: an acceptance where Alg. 1 must reject no longer a violation"),
    dict(path=PR, old="    if tau < probe.must_accept:",
         new="    if False:",
         why="standard probes: a rejection where Alg. 1 must accept no longer a violation"),
    dict(path=PR, old="    if probe.exact_output is not None and tuple(out) != probe.exact_output:",
         new="    if False:",
         why="standard probes: a wrong output where only one is possible no longer a violation"),
    dict(path=PR, old="    return base_probes() + zero_mass_probes(sampler) + zero_mass_probes(sampler, max_cases=2, masked=True)",
         new="    return base_probes()",
         why="the zero-mass residual probes dropped"),
    dict(path=PR, old='        Probe("p=0 drafted token, u=0", P0, Q0, (0,), "zero", must_reject=True,',
         new='        Probe("p=0 drafted token, u=0", P0, Q0, (0,), 0.5, must_reject=True,',
         why="the p = 0, u = 0 probe silently forced to u = ½ (never reaches the u ≤ ratio bug)"),
    dict(path=PR, old='        Probe("disjoint supports, u=0", DISJ_P, DISJ_Q, (2,), "zero", must_reject=True,',
         new='        Probe("disjoint supports, u=0", DISJ_P, DISJ_Q, (2,), 0.5, must_reject=True,',
         why="the disjoint-supports u = 0 probe silently forced to u = ½"),
    dict(path=MD, old="        bad = int((~trace.on_tree).sum())",
         new="        bad = 0",
         why="multidraft structure silenced"),
    dict(path=MD, old="        self.on_tree.append(tuple(out[:-1]) in prepared[\"paths\"])",
         new="        self.on_tree.append(tuple(out[:-1]) in prepared[\"paths\"] or len(out) > 2)",
         why="multidraft structure: a block longer than two tokens always counted on a draft"),
    dict(path=MD, old="        return [stats.chisquare_gof(label(trace), counts, probs / probs.sum(),",
         new="        return [stats.chisquare_gof(label(trace), probs / probs.sum() * counts.sum(), probs / probs.sum(),",
         why="multidraft rule_block_law silenced"),
    dict(path=MD, old="        return [stats.z_test_mean(label(trace), float(e[trace.start].mean()), mean=float(tau.mean()),",
         new="        return [stats.z_test_mean(label(trace), float(e[trace.start].mean()), mean=float(e[trace.start].mean()),",
         why="multidraft rule_expected_tau silenced"),
    dict(path=MD, old="        rows_p = [P[0]] + [P[d + 1] for d in depth]",
         new="        rows_p = [P[-1]] + [P[-1] for d in depth]",
         why="a tree probe's node rows all the probe's bonus row (the p = 0 drafted token accepted)"),
    dict(path=PR, old="    return base_probes() + zero_mass_probes(sampler) + zero_mass_probes(sampler, max_cases=2, masked=True)",
         new="    return base_probes() + zero_mass_probes(sampler)",
         why="the zero-mass probes on rows with token 0 masked dropped (a NaN residual falling back to token 0 passes)"),
    dict(path=CK, old="            impossible += int(counts[probs <= 0].sum())\n            counts = np.where(probs > 0, counts, 0.0)",
         new="            impossible += int(counts[probs <= 0].sum())",
         why="token_law_by_state: a draw of probability 0 kept in the statistic (it is the impossible-token check's)"),
    dict(path=JS, old="    broken = degenerate & (((b <= 0) & (k_s > 0)) | ((b >= 1) & (k_s < n_s)))",
         new="    broken = degenerate & ((b <= 0) & (k_s > 0))",
         why="acceptance: a rejection in a β = 1 state no longer an exact violation"),
    # --- (b) a sample shrunk on one built-in instance --------------------------------------------
    dict(path=CK, old="    counts = np.bincount(idx[possible], minlength=pair.V ** N)",
         new="    counts = np.bincount(idx[possible][: int(possible.sum()) - (pair.V == 4)], minlength=pair.V ** N)",
         why="first_tokens drops one run on the V = 4 instances"),
    dict(path=CK, old="    for row, L in zip(trace.emitted[sel], trace.length[sel]):\n"
                      "        counts[index.get(tuple(int(t) for t in row[:L]), len(blocks))] += 1\n"
                      "    probs = np.array([law[b] for b in blocks] + [0.0])\n"
                      "    return stats.chisquare_gof(label(trace), counts, probs,",
         new="    for row, L in zip(trace.emitted[sel][pair.n_states == 9:], trace.length[sel]):\n"
             "        counts[index.get(tuple(int(t) for t in row[:L]), len(blocks))] += 1\n"
             "    probs = np.array([law[b] for b in blocks] + [0.0])\n"
             "    return stats.chisquare_gof(label(trace), counts, probs,",
         why="block_law skips the first run on the order-2 instances (9 states)"),
    dict(path=CK, old="    full = trace.length == trace.gamma + 1",
         new="    full = (trace.length == trace.gamma + 1) & ~(trace.first & (pair.V == 3))",
         why="bonus_by_state ignores the bonus of first calls on the V = 3 instances"),
    dict(path=CK, old="        cells = np.bincount(s * V + blocks[:, i], minlength=S * V).reshape(S, V)",
         new="        cells = np.bincount((s * V + blocks[:, i])[: s.size - (S == 1)], minlength=S * V).reshape(S, V)",
         why="token_law_by_state drops the last call on the i.i.d. instances"),
    dict(path=CK, old="    for i in range(g):\n        tried = tau >= i",
         new="    for i in range(g - (pair.V == 4 and g > 1)):\n        tried = tau >= i",
         why="acceptance_by_state breaks before the last drafted position on the V = 4 instances"),
    dict(path=CK, old="    tau = (trace.length - 1).astype(np.float64)\n    claimed = e[trace.start]",
         new="    tau = (trace.length - 1).astype(np.float64)[: trace.n_calls - (pair.V == 1)]\n"
             "    claimed = e[trace.start][: trace.n_calls - (pair.V == 1)]",
         why="expected_tau drops the last call on the one-token instance"),
    dict(path=CK, old="        short = L <= g\n",
         new="        short = (L <= g) & ((np.arange(L.size) % 2 == 0) | (pair.n_states != 3))\n",
         why="tokens_per_call structure inspects every other call on the 3-state instances (n still all calls)"),
    dict(path=CK, old="    counts = np.bincount(trace.length[sel] - 1, minlength=g + 1)",
         new="    counts = np.bincount(trace.length[sel][int(pair.V == 3):] - 1, minlength=g + 1)",
         why="tokens_per_call's law of L drops the first run on the V = 3 instances"),
    dict(path=DR, old="        while self.n_runs < n_runs:\n            s, got, first = 0, [], True\n"
                      "            context = self.start_context()",
         new="        while self.n_runs < n_runs - (self.pair.name == \"iid-V3-disjoint\"):\n"
             "            s, got, first = 0, [], True\n            context = self.start_context()",
         why="the runs loop stops one run short on iid-V3-disjoint"),
    dict(path=DR, old="        while self.n_runs < n_runs:\n            s, got, first = 0, [], True\n"
                      "            context = self.start_context()",
         new="        while self.n_runs < n_runs - (type(self).__name__ == \"StepRuns\" and self.pair.V == 1):\n"
             "            s, got, first = 0, [], True\n            context = self.start_context()",
         why="the decoding-step runs stop one run short on iid-V1"),
    dict(path=DR, old="        while self.n_runs < n_runs:\n            s, got, first = 0, [], True\n"
                      "            context = self.start_context()",
         new="        while self.n_runs < n_runs - (type(self).__name__ == \"MultiRuns\" and self.pair.V == 4):\n"
             "            s, got, first = 0, [], True\n            context = self.start_context()",
         why="the multi-draft runs stop one run short on iid-V4-strong"),
    dict(path=MD, old="        for row, L in zip(trace.emitted[trace.first], trace.length[trace.first]):",
         new="        for row, L in zip(trace.emitted[trace.first][pair.V == 1:], trace.length[trace.first]):",
         why="multidraft rule_block_law skips the first run on iid-V1"),
    dict(path=MD, old="        d = tau - e[trace.start]\n        n = d.size",
         new="        d = (tau - e[trace.start])[: tau.size - (pair.n_states == 3)]\n        n = d.size",
         why="multidraft rule_expected_tau drops the last call on markov1-V3-mix0.4"),
]
