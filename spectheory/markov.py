"""n-th order Markov sources over V tokens: the synthetic "language models" of spectheory.

A source of order ``n`` has ``S = V**n`` states, one per context of the last ``n`` tokens,
encoded in base V with the most recent token as the least significant digit, so that the
next state after emitting ``x`` in state ``s`` is ``(s·V + x) mod S`` (order 0: one state).
Each state points to a row of a conditional table; rows may be shared between states
(``row_of_state``), which lets a first-order source over V = 32,000 tokens fit in memory.

A :class:`MarkovPair` is a target ``p`` and a draft ``q`` over the same state space.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .distributions import DistributionError, check_distribution
from .checks import MAX_SEQUENCES, check_int, check_state
from .rng import check_random_state

#: Largest state space for which dense S×S matrices are built.
DENSE_STATE_LIMIT = 4096
#: Largest number of states of a source (row_of_state is materialised).
MAX_STATES = 1 << 26


def next_state(state, token, V: int, n_states: int):
    """State after emitting ``token`` in ``state`` (works for scalars and arrays)."""
    return (state * V + token) % n_states


def token_to_state_matrix(weights: np.ndarray, V: int, n_states: int) -> np.ndarray:
    """Dense M[s, s'] = Σ_{x: next(s,x)=s'} weights[s, x] for an (S, V) weight table."""
    if n_states > DENSE_STATE_LIMIT:
        raise ValueError(f"{n_states} states is too many for a dense S×S matrix (limit {DENSE_STATE_LIMIT})")
    M = np.zeros((n_states, n_states))
    nxt = next_state(np.arange(n_states)[:, None], np.arange(V)[None, :], V, n_states)
    np.add.at(M, (np.repeat(np.arange(n_states), V), nxt.ravel()), weights.ravel())
    return M


@dataclass(frozen=True, eq=False)
class MarkovSource:
    """Conditional next-token tables of an order-``order`` Markov source.

    Parameters
    ----------
    rows : (R, V) array, each row a distribution.
    order : context length n ≥ 0.
    row_of_state : (V**n,) int array mapping each state to its row; default ``arange``
        (requires R == V**n).
    """

    rows: np.ndarray
    order: int
    row_of_state: np.ndarray = field(default=None)

    def __post_init__(self):
        rows = check_distribution(self.rows, name="conditional table")
        if rows.ndim != 2:
            raise DistributionError(f"conditional table must be 2-D (rows × V), got shape {rows.shape}")
        order = check_int(self.order, "order", min=0)
        V = rows.shape[1]
        if V > 1 and order * np.log2(V) > np.log2(MAX_STATES):
            raise ValueError(f"an order-{order} source over V={V} has V**order > {MAX_STATES} states; "
                             "lower the order or the vocabulary")
        S = V ** order
        ros = self.row_of_state
        if ros is None:
            if rows.shape[0] != S:
                raise ValueError(
                    f"an order-{order} source over V={V} has {S} states; got {rows.shape[0]} rows "
                    "(pass row_of_state to share rows between states)")
            ros = np.arange(S, dtype=np.int64)
        ros_in = np.asarray(ros)
        if ros_in.size and not np.issubdtype(ros_in.dtype, np.integer):
            raise TypeError(f"row_of_state must hold integer row indices, got dtype {ros_in.dtype}")
        ros = ros_in.astype(np.int64)
        if ros.shape != (S,):
            raise ValueError(f"row_of_state must have shape ({S},), got {ros.shape}")
        if ros.min() < 0 or ros.max() >= rows.shape[0]:
            raise ValueError(f"row_of_state points outside the table (rows 0..{rows.shape[0] - 1}); "
                             f"got {ros.min()}..{ros.max()}")
        rows.setflags(write=False)
        ros.setflags(write=False)
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "row_of_state", ros)

    @property
    def V(self) -> int:
        return self.rows.shape[1]

    @property
    def n_states(self) -> int:
        return self.row_of_state.shape[0]

    def conditional(self, state: int) -> np.ndarray:
        """Next-token distribution in ``state``."""
        state = check_state(state, self.n_states, "state")
        return self.rows[self.row_of_state[state]]

    @cached_property
    def table(self) -> np.ndarray:
        """Dense (S, V) table (materialised; only for small S·V)."""
        return self.rows[self.row_of_state]

    def state_of_context(self, context) -> int:
        """State index of a context (sequence of tokens, oldest first); shorter contexts are
        left-padded with token 0."""
        ctx = np.asarray(list(context))
        if ctx.size and (not np.issubdtype(ctx.dtype, np.integer) or ctx.ndim != 1
                         or ctx.min() < 0 or ctx.max() >= self.V):
            raise ValueError(f"context must be a sequence of token ids in [0, {self.V}), got {list(context)!r}")
        s = 0
        for tok in list(context)[-self.order:] if self.order else []:
            s = next_state(s, int(tok), self.V, self.n_states)
        return s

    def sequence_probs(self, length: int, start_state: int = 0) -> np.ndarray:
        """Exact ``p(x^length | start)`` for all V**length sequences (first token most
        significant in the flat index). Enumeration: use for small V and length."""
        V, S = self.V, self.n_states
        length = check_int(length, "length", min=0)
        start_state = check_state(start_state, S)
        if V > 1 and length * np.log2(V) > np.log2(MAX_SEQUENCES):
            raise ValueError(f"V**length = {V}**{length} sequences is too many to enumerate "
                             f"(limit {MAX_SEQUENCES})")
        probs = np.ones(1)
        states = np.array([start_state], dtype=np.int64)
        for _ in range(length):
            probs = (probs[:, None] * self.rows[self.row_of_state[states]]).ravel()
            states = next_state(states[:, None], np.arange(V)[None, :], V, S).ravel()
        return probs

    def transition_matrix(self) -> np.ndarray:
        """Dense S×S state transition matrix."""
        return token_to_state_matrix(self.table, self.V, self.n_states)

    def stationary(self) -> np.ndarray:
        """The stationary distribution over states (unique for an irreducible chain; for a
        reducible one, the long-run state frequencies seen from state 0, computed exactly)."""
        return stationary_distribution(self.transition_matrix())

    def entropy_rate(self, base: float = np.e) -> float:
        """Stationary entropy rate Σ_s π(s) H(p(·|s)) (nats by default)."""
        from .divergences import entropy
        return float(self.stationary() @ entropy(self.table, base))

    def sample(self, length: int, seed=None, start_state: int = 0) -> np.ndarray:
        """Sample ``length`` tokens autoregressively (plain NumPy, for tests and examples)."""
        length = check_int(length, "length", min=0)
        start_state = check_state(start_state, self.n_states)
        rng = check_random_state(seed)
        out = np.empty(length, dtype=np.int64)
        s = start_state
        for i in range(length):
            x = rng.choice(self.V, p=self.conditional(s))
            out[i] = x
            s = next_state(s, x, self.V, self.n_states)
        return out


def _check_stochastic(T, name: str = "T") -> np.ndarray:
    T = np.asarray(T, dtype=np.float64)
    if T.ndim != 2 or T.shape[0] != T.shape[1] or T.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {T.shape}")
    if not np.all(np.isfinite(T)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    if (T < -1e-12).any():
        raise ValueError(f"{name} has negative entries (min {T.min():.3g})")
    T = np.clip(T, 0.0, None)  # rounding-level negatives from matrix products
    off = np.abs(T.sum(axis=1) - 1.0) > 1e-9
    if off.any():
        r = int(np.flatnonzero(off)[0])
        raise ValueError(f"{name} is not row-stochastic: row {r} sums to {T[r].sum():.12g}")
    return T


def _solve_irreducible(T: np.ndarray) -> np.ndarray:
    """Unique stationary law of an irreducible stochastic matrix: πT = π, Σπ = 1, solved
    directly (one balance equation replaced by the normalisation)."""
    n = T.shape[0]
    if n == 1:
        return np.ones(1)
    A = T.T - np.eye(n)
    A[-1] = 1.0
    b = np.zeros(n)
    b[-1] = 1.0
    pi = np.clip(np.linalg.solve(A, b), 0.0, None)
    return pi / pi.sum()


def communicating_classes(T) -> tuple[np.ndarray, np.ndarray]:
    """Communicating classes of a stochastic matrix (strongly connected components of the
    graph T[s, s'] > 0): returns ``(labels, closed)``, ``labels[s]`` the class of state s and
    ``closed[c]`` whether class c has no way out (a recurrent class)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    T = _check_stochastic(T)
    graph = csr_matrix(T > 0)
    n_cls, labels = connected_components(graph, directed=True, connection="strong")
    src, dst = graph.nonzero()
    leaves = np.zeros(n_cls, dtype=bool)
    leaves[labels[src[labels[src] != labels[dst]]]] = True
    return labels, ~leaves


def stationary_distribution(T: np.ndarray, start: int = 0) -> np.ndarray:
    """Stationary distribution of a row-stochastic matrix, exactly (no iteration).

    Irreducible chain: the unique solution of ``πT = π``, Σπ = 1. Reducible chain: the
    long-run (Cesàro) state frequencies seen from ``start``,
    ``π = Σ_C P(absorbed in C | start) π_C`` over the closed communicating classes C, with
    ``π_C`` the stationary law of T restricted to C and the absorption probabilities from
    the linear system over the transient states. Periodic chains are handled (the Cesàro
    limit exists and equals this). Raises ValueError for a non-stochastic T or a bad start.
    """
    T = _check_stochastic(T)
    S = T.shape[0]
    start = check_state(start, S, "start")
    labels, closed = communicating_classes(T)
    if len(closed) == 1:
        return _solve_irreducible(T)
    recurrent = closed[labels]
    out = np.zeros(S)
    if recurrent[start]:
        members = np.flatnonzero(labels == labels[start])
        out[members] = _solve_irreducible(T[np.ix_(members, members)])
        return out
    # absorption probabilities from the transient states: (I − T_tt) H = T_t,C 1 for every
    # closed class C at once (one column per class)
    transient = np.flatnonzero(~recurrent)
    closed_ids = np.flatnonzero(closed)
    into = np.zeros((S, len(closed_ids)))
    col = np.full(len(closed), -1)
    col[closed_ids] = np.arange(len(closed_ids))
    rec = np.flatnonzero(recurrent)
    into[rec, col[labels[rec]]] = 1.0
    H = np.linalg.solve(np.eye(len(transient)) - T[np.ix_(transient, transient)], T[transient] @ into)
    h = H[np.searchsorted(transient, start)]
    for c, w in zip(closed_ids, h):
        if w > 0:
            members = np.flatnonzero(labels == c)
            out[members] += w * _solve_irreducible(T[np.ix_(members, members)])
    out = np.clip(out, 0.0, None)
    return out / out.sum()


@dataclass(frozen=True, eq=False)
class MarkovPair:
    """A target ``p`` and a draft ``q`` over the same vocabulary and state space."""

    target: MarkovSource
    draft: MarkovSource
    name: str = "pair"
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        for role in ("target", "draft"):
            if not isinstance(getattr(self, role), MarkovSource):
                raise TypeError(f"{role} must be a MarkovSource, got {type(getattr(self, role)).__name__}")
        if self.target.V != self.draft.V:
            raise DistributionError(
                f"mismatched vocabularies: target has V={self.target.V}, draft has V={self.draft.V}")
        if self.target.order != self.draft.order:
            raise ValueError(
                f"target has order {self.target.order}, draft order {self.draft.order}: "
                "lift the lower-order one with lift_order() first")

    @property
    def V(self) -> int:
        return self.target.V

    @property
    def order(self) -> int:
        return self.target.order

    @property
    def n_states(self) -> int:
        return self.target.n_states

    def acceptance_by_state(self) -> np.ndarray:
        """β(s) = Σ_x min(p(x|s), q(x|s)) for every state (claim ``sd.acceptance``)."""
        from .divergences import overlap
        return overlap(self.target.table, self.draft.table)

    def describe(self) -> dict:
        return {"name": self.name, "V": self.V, "order": self.order, **self.params}


def lift_order(source: MarkovSource, order: int) -> MarkovSource:
    """The same source viewed as an order-``order`` source (order ≥ source.order): each
    longer context uses the row of its last ``source.order`` tokens."""
    if not isinstance(source, MarkovSource):
        raise TypeError(f"source must be a MarkovSource, got {type(source).__name__}")
    order = check_int(order, "order", min=0)
    if order < source.order:
        raise ValueError(f"can only lift to a higher order: source has order {source.order}, asked {order}")
    V = source.V
    S_new = V ** order
    S_old = source.n_states
    states = np.arange(S_new, dtype=np.int64) % S_old  # last `source.order` tokens
    return MarkovSource(source.rows, order, source.row_of_state[states])
