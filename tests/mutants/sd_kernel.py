"""Plausible bugs in the sd Numba kernel (spectheory/_kernels/sd.py), replayed by
tests/mutation/run_mutants.py. The kernel has a plain-NumPy twin; each mutant is applied to
the kernel alone, so the kernel-vs-twin identity test sees it, and the statistical tests and
`verify --quick` must see it too (they would on a twin with the same bug).
The `old` texts follow the kernel's source: when the kernel is rewritten, update them."""

CLAIMS = "sd.*"
TESTS = "tests/test_sd_kernel.py tests/test_sd_statistics.py"

MUTANTS = [
    dict(path="spectheory/_kernels/sd.py",
         old="        qv = t.q_tab[t.qrow[s], x]",
         new="        qv = t.q_tab[t.prow[s], x]",
         why="q read through the target's row map",
         tests="tests/test_sd_kernel.py::test_first_tokens_law_on_pairs_with_different_row_maps "
               "tests/test_sd_kernel.py::test_block_law_from_every_start_state"),
    dict(path="spectheory/_kernels/sd.py",
         old="        s = states_buf[i]\n        x = draft_buf[i]",
         new="        s = states_buf[i + 1]\n        x = draft_buf[i]",
         why="off by one: verification uses the state after the drafted token",
         tests="tests/test_sd_kernel.py::test_first_tokens_law_on_pairs_with_different_row_maps "
               "tests/test_sd_kernel.py::test_block_law_from_every_start_state"),
    dict(path="spectheory/_kernels/sd.py",
         old="            ok = u[gamma + i] < pv / qv",
         new="            ok = u[i] < pv / qv",
         why="the draft's uniform reused for the acceptance test",
         tests="tests/test_sd_kernel.py::test_first_tokens_law_on_pairs_with_different_row_maps "
               "tests/test_sd_kernel.py::test_block_law_from_every_start_state"),
    dict(path="spectheory/_kernels/sd.py",
         old="            row = t.r_cdf[t.rrow[s]]",
         new="            row = t.p_cdf[t.prow[s]]",
         why="correction drawn from p instead of the residual",
         tests="tests/test_sd_kernel.py::test_first_tokens_law_on_pairs_with_different_row_maps "
               "tests/test_sd_kernel.py::test_block_law_from_every_start_state"),
    dict(path="spectheory/_kernels/sd.py",
         old="        row = t.p_cdf[t.prow[s]]\n        y = _search(row, u[2 * gamma] * row[V - 1])\n        out_block[gamma] = y",
         new="        row = t.q_cdf[t.qrow[s]]\n        y = _search(row, u[2 * gamma] * row[V - 1])\n        out_block[gamma] = y",
         why="bonus token drawn from q",
         tests="tests/test_sd_kernel.py::test_first_tokens_law_on_pairs_with_different_row_maps "
               "tests/test_sd_kernel.py::test_block_law_from_every_start_state"),
    dict(path="spectheory/_kernels/sd.py",
         old="            for j in range(min(tau + 1, gamma)):",
         new="            for j in range(min(tau + 1, gamma + 1)):",
         why="per-state counters count the bonus position as a verification attempt",
         tests="tests/test_sd_kernel.py::test_state_counters_are_consistent_with_tau"),
]
