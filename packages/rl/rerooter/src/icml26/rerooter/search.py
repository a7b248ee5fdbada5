"""Policy-guided best-first tree searches: LTS, PHS* and √LTS (rerooted LTS).

Papers:
- Orseau, Lelis, Lattimore, Weber. *Single-Agent Policy Tree Search With Guarantees* (NeurIPS 2018):
  Levin tree search (LTS) expands nodes in increasing ``d(n) / pi(n)``.
- Orseau, Lelis. *Policy-Guided Heuristic Search with Guarantees* (AAAI 2021): PHS*,
  ``log phi(n) = log(g + h) - (1 + h/g) log pi(n)``.
- Orseau, Hutter, Lelis. *Exponential Speedups by Rerooting Levin Tree Search* (2024): √LTS runs,
  implicitly, one LTS rooted at every expanded node n_k, weighted by a rerooter w(n_k); a node's
  priority is (their Eq. 7, in log space)

      cost(n) = min_{k <= d(n), w(n_k) > 0}  log lambda(n; n_k) - log w(n_k),
      lambda(n; n_k) = sum_{j=k}^{d(n)} 1 / pi(n_j | n_k)            (slenderness)

  with w(root) = 1, so the root term alone is LTS with the slenderness cost.
- The ICML 2026 paper learns the rerooter; its rerooters live in ``rerooters.py``.

Implementation (ours; the authors' is C++, tuero/libpolicyts): the naive min over all ancestors
costs
O(d) per node and O(d^2) to recompute lambda. We keep, per node, the list of *live* ancestor terms
``(a_k, b_k)`` with ``a_k = lambda(n; n_k) pi(n | n_k) = sum_{j>=k} pi(n | n_j)`` and
``b_k = log pi(n_k) - log w(n_k)``, so that ``cost = min_k (log a_k + b_k) - log pi(n)``. A child
updates every term with the paper's stable recurrence ``a <- a p + 1`` (their Remark 43,
``c <- c p_j + 1``). All terms see the same p, so a term with both a larger a and a larger b than a
newer term stays worse forever and is dropped when the newer one arrives: a's decrease with k, so
the live list is a stack with b increasing, usually a handful of entries.

Goal test at generation, duplicate states pruned (a graph search on the tree's states, as in the
authors' code), dead states (``env.is_dead``) pruned, batched evaluator calls.
"""

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal

import numpy as np

from icml26.rerooter.environment import Environment
from icml26.rerooter.evaluators import Evaluator, check_output
from icml26.testing.checks import integer, number

Terms = list[tuple[float, float]]


@dataclass
class SearchResult:
    """What a search returns."""

    solved: bool
    """Whether a goal was generated within the budget."""
    actions: list[int]
    """The solution's moves from the initial state (empty if unsolved)."""
    expansions: int
    """Nodes expanded (their children generated)."""
    generated: int
    """Nodes generated (distinct states added to the tree, root included)."""
    solution_log_prob: float = float("nan")
    """log pi of the solution path under the search's policy (nan if unsolved)."""
    states: list[Any] = field(default_factory=list, repr=False)
    """States along the solution, initial state first, goal last."""
    expansion_order: list[Any] = field(default_factory=list, repr=False)
    """Hashes of the expanded states in order (only with ``trace=True``)."""
    expansion_costs: list[float] = field(default_factory=list, repr=False)
    """The priority each expanded node had (only with ``trace=True``)."""
    bound: dict[str, float] = field(default_factory=dict, repr=False)
    """√LTS only, when solved: the terms of the expansion bound along the solution (see
    ``bound_terms``)."""


@dataclass
class SearchTree:
    """The search's node arrays; rerooters read them (node ids are list indices, root = 0)."""

    states: list[Any] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)
    action: list[int] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    log_prob: list[float] = field(default_factory=list)
    """log pi(n) from the root."""
    h: list[float] = field(default_factory=list)
    """The evaluator's cost-to-go estimate, clipped at 0 (nan until evaluated)."""
    w: list[float] = field(default_factory=list)
    """Rerooting weight given at expansion (nan until expanded)."""


class Rerooter:
    """Base class: gives every non-root node weight 0, i.e. √LTS degenerates to LTS.

    The search calls the hooks in this order: ``reset`` once (after the root is evaluated),
    ``generated``/``revisited`` for each child, ``evaluated`` after each batch of evaluator calls,
    and ``weight`` when a node is expanded (before its children are generated).
    """

    def reset(self, tree: SearchTree) -> None:
        self.tree = tree

    def generated(self, parent: int, child: int) -> None:
        pass

    def revisited(self, parent: int, node: int) -> None:
        pass

    def evaluated(self) -> None:
        pass

    def weight(self, node: int) -> float:
        return 0.0


# -- the √LTS cost, incrementally ------------------------------------------------------------------
def extend_terms(terms: Terms, p: float) -> Terms:
    """The live terms of a child reached with probability p: ``a <- a p + 1`` (Remark 43)."""
    return [(a * p + 1.0, b) for a, b in terms]


def add_rerooting_point(terms: Terms, log_prob: float, w: float) -> Terms:
    """The terms an expanded node n passes to its children once it becomes a rerooting point.

    ``log_prob`` is log pi(n), ``w`` its weight; the new term has a = lambda(n; n) pi(n|n) = 1.
    Older terms with b >= the new b are dominated forever and dropped.
    """
    if not w > 0.0:
        return terms
    b = log_prob - math.log(w)
    live = list(terms)
    while live and live[-1][1] >= b:
        live.pop()
    live.append((1.0, b))
    return live


def terms_cost(terms: Terms, log_prob: float) -> float:
    """``min_k log lambda(n; n_k) - log w(n_k)`` from the live terms of n (log pi(n) = log_prob)."""
    return min(math.log(a) + b for a, b in terms) - log_prob


def rerooted_cost_reference(path_log_probs: Sequence[float], weights: Sequence[float]) -> float:
    """The √LTS priority of n_d straight from the definition, O(d^2): the test oracle.

    ``path_log_probs[j] = log pi(n_{j+1} | n_j)`` for j < d; ``weights[k] = w(n_k)`` for k < d
    (``weights[0]`` is ignored: the root's weight is 1).
    """
    d = len(path_log_probs)
    if len(weights) != d or d == 0:
        raise ValueError(f"need d >= 1 weights and log-probs, got {len(weights)} and {d}")
    best = math.inf
    for k in range(d):
        w = 1.0 if k == 0 else weights[k]
        if w <= 0.0:
            continue
        # lambda(n_d; n_k) = sum_{j=k}^{d} 1/pi(n_j | n_k), each pi as a product over the path.
        lam = sum(
            1.0 / math.prod(math.exp(lp) for lp in path_log_probs[k:j]) for j in range(k, d + 1)
        )
        best = min(best, math.log(lam) - math.log(w))
    return best


def log_slenderness(path_log_probs: Sequence[float]) -> float:
    """log lambda(n_j; n_i) for the path n_i -> n_j with these step log-probabilities, O(j - i):
    ``a <- a p + 1`` from a = 1 gives lambda(n_j; n_i) pi(n_j | n_i)."""
    a = 1.0
    for lp in path_log_probs:
        a = a * math.exp(lp) + 1.0
    return math.log(a) - math.fsum(path_log_probs)


def bound_terms(
    path_log_probs: Sequence[float], weights: Sequence[float], total_weight: float
) -> dict[str, float]:
    """The terms of √LTS's expansion bound for a solution path, as the authors' search logs
    them (``rlts.h``): ``W`` = the sum of the weights of all expanded nodes; the path's
    rerooting points are its nodes with w > 0 (the root's w is 1); each segment between
    consecutive points (and the last point to the goal) has cost ``log lambda`` over it; the
    segment maximising ``cost - log w`` (w of its first node) gives

        log_bound_simplified = log W - log w* + cost*
        log_bound_trivial    = log W + log lambda(goal; root)

    The authors' code leaves the last segment (to the goal) out of the maximum; here it is in.
    """
    d = len(path_log_probs)
    if len(weights) != d or d == 0 or not total_weight > 0:
        raise ValueError("need d >= 1 log-probs and weights and a positive total weight")
    points = [0] + [k for k in range(1, d) if weights[k] > 0.0]
    ends = [*points[1:], d]
    best, best_w, best_cost = -math.inf, 1.0, 0.0
    for start, end in zip(points, ends, strict=True):
        w = 1.0 if start == 0 else weights[start]
        cost = log_slenderness(path_log_probs[start:end])
        if cost - math.log(w) > best:
            best, best_w, best_cost = cost - math.log(w), w, cost
    log_w = math.log(total_weight)
    return {
        "W": total_weight,
        "log_slenderness_solution": log_slenderness(path_log_probs),
        "max_segment_w": best_w,
        "max_segment_log_slenderness": best_cost,
        "log_bound_simplified": log_w - math.log(best_w) + best_cost,
        "log_bound_trivial": log_w + log_slenderness(path_log_probs),
    }


def slenderness_reference(path_log_probs: Sequence[float]) -> float:
    """log lambda(n_d; n_0): the LTS slenderness cost from its definition."""
    return rerooted_cost_reference(path_log_probs, [1.0] + [0.0] * (len(path_log_probs) - 1))


# -- the shared best-first engine ------------------------------------------------------------------
Priority = Literal["d_pi", "slenderness", "phs_star", "rerooted"]


def _validate(env: Environment, budget: int, batch_size: int, mix_epsilon: float) -> None:
    if not isinstance(env, Environment):
        raise TypeError(f"env must implement the Environment protocol, got {type(env).__name__}")
    # 2.5 or True would run as 3 or 1 expansions: counts must be integers
    integer("budget", budget, low=1)
    integer("batch_size", batch_size, low=1)
    number("mix_epsilon", mix_epsilon, low=0.0, below=1.0)


def best_first_search(
    env: Environment,
    evaluator: Evaluator,
    budget: int,
    priority: Priority,
    rerooter: Rerooter | None = None,
    *,
    batch_size: int = 32,
    mix_epsilon: float = 0.0,
    trace: bool = False,
    naive: bool = False,
    replay: Sequence[Any] | None = None,
) -> SearchResult:
    """The engine behind ``lts``, ``phs_star`` and ``sqrt_lts`` (see their docstrings).

    ``naive=True`` (rerooted only) recomputes every node's cost from the definition, O(d^2) per
    node, as a baseline for ``bench`` and a cross-check in the tests.

    ``replay`` (state hashes, e.g. another search's ``expansion_order``) expands exactly those
    nodes in that order instead of popping the open list, while still computing and pushing
    every cost and running the rerooter: every priority then does its bookkeeping on one and the
    same tree, so ``bench`` can time the bookkeeping alone. Each replayed state must have been
    generated before its turn (true for any search's own trace on the same environment).
    """
    _validate(env, budget, batch_size, mix_epsilon)
    if not callable(evaluator):
        raise TypeError(f"evaluator must be callable (env, states) -> (log_pi, h): {evaluator}")
    if rerooter is not None and not isinstance(rerooter, Rerooter):
        raise TypeError(f"rerooter must be a Rerooter (or None), got {type(rerooter).__name__}")
    if priority not in ("d_pi", "slenderness", "phs_star", "rerooted"):
        raise ValueError(f"unknown priority {priority!r}")
    if priority == "rerooted" and rerooter is None:
        rerooter = Rerooter()
    search = _BestFirst(env, evaluator, priority, rerooter, batch_size, mix_epsilon, naive)
    return search.run(budget, trace, replay)


class _BestFirst:
    """One best-first search: the tree with its per-node bookkeeping (policy, slenderness
    a(n), live √LTS terms), the open list, and the batch of nodes waiting for the evaluator."""

    def __init__(self, env, evaluator, priority, rerooter, batch_size, mix_epsilon, naive):
        self.env, self.evaluator, self.priority, self.rerooter = env, evaluator, priority, rerooter
        self.batch_size, self.mix_epsilon, self.naive = batch_size, mix_epsilon, naive
        self.rerooted = priority == "rerooted"
        self.tree = SearchTree()
        self.policy: list[list[float] | None] = []  # log pi(. | n), filled when n is evaluated
        self.slender: list[float] = []  # a(n) = lambda(n; root) pi(n), slenderness LTS
        self.terms: list[Terms] = []  # live √LTS terms of n (rerooted)
        self.open_list: list[tuple[float, int]] = []
        self.pending: list[int] = []
        self.seen: dict = {}
        self.result = SearchResult(False, [], 0, 0)
        self.total_weight = 0.0  # sum of w over expanded nodes (√LTS): the bound's W

    def new_node(self, state, par: int, act: int, d: int, lp: float, a: float, t: Terms) -> int:
        tree = self.tree
        tree.states.append(state)
        tree.parent.append(par)
        tree.action.append(act)
        tree.depth.append(d)
        tree.log_prob.append(lp)
        tree.h.append(math.nan)
        tree.w.append(math.nan)
        self.policy.append(None)
        self.slender.append(a)
        self.terms.append(t)
        return len(tree.states) - 1

    def cost(self, i: int) -> float:
        """The priority of node i (its policy and h known): the search's cost function."""
        tree = self.tree
        if i == 0:
            return 0.0
        if self.priority == "d_pi":
            return math.log(tree.depth[i]) - tree.log_prob[i]
        if self.priority == "slenderness":
            return math.log(self.slender[i]) - tree.log_prob[i]
        if self.priority == "phs_star":
            g, hv = tree.depth[i], tree.h[i]
            return math.log(g + hv) - (1.0 + hv / g) * tree.log_prob[i]
        if self.naive:
            return self.naive_cost(i)
        return terms_cost(self.terms[i], tree.log_prob[i])

    def naive_cost(self, i: int) -> float:
        tree = self.tree
        path_lp, weights = [], []
        j = i
        while tree.parent[j] >= 0:
            par = tree.parent[j]
            path_lp.append(self.policy[par][tree.action[j]])
            weights.append(tree.w[par])
            j = par
        return rerooted_cost_reference(path_lp[::-1], weights[::-1])

    def evaluate(self) -> None:
        """Evaluate the pending batch and push its nodes on the open list."""
        num_actions = self.env.num_actions
        batch = [self.tree.states[i] for i in self.pending]
        log_pi, hs = self.evaluator(self.env, batch)
        log_pi, hs = np.asarray(log_pi, dtype=np.float64), np.asarray(hs, dtype=np.float64)
        check_output(log_pi, hs, len(batch), num_actions)
        if self.mix_epsilon > 0.0:
            eps = self.mix_epsilon
            log_pi = np.log((1.0 - eps) * np.exp(log_pi) + eps / num_actions)
        for i, row, hv in zip(self.pending, log_pi.tolist(), hs.tolist(), strict=True):
            self.policy[i] = row
            self.tree.h[i] = hv if hv > 0.0 else 0.0
            heapq.heappush(self.open_list, (self.cost(i), i))
        self.pending.clear()
        if self.rerooter is not None and len(self.tree.states) > 1:  # the root precedes reset()
            self.rerooter.evaluated()

    def run(self, budget: int, trace: bool, replay) -> SearchResult:
        env, result = self.env, self.result
        root = env.initial_state()
        self.new_node(root, -1, -1, 0, 0.0, 1.0, [])
        if env.is_goal(root):
            result.solved, result.states, result.solution_log_prob = True, [root], 0.0
            result.generated = 1
            return result
        self.seen[env.hash(root)] = 0
        self.pending.append(0)
        self.evaluate()
        if self.rerooter is not None:
            self.rerooter.reset(self.tree)
        replay_iter = iter(replay) if replay is not None else None
        while self.open_list and result.expansions < budget:
            picked = self.next_node(replay_iter)
            if picked is None:
                break
            c, n = picked
            result.expansions += 1
            if trace:
                result.expansion_order.append(env.hash(self.tree.states[n]))
                result.expansion_costs.append(c)
            if self.expand(n):
                return result
            if self.pending and (not self.open_list or len(self.pending) >= self.batch_size):
                self.evaluate()
        result.generated = len(self.tree.states)
        return result

    def next_node(self, replay_iter) -> tuple[float, int] | None:
        """The open list's best (cost, node), or the replay's next node (cost NaN)."""
        if replay_iter is None:
            return heapq.heappop(self.open_list)
        key = next(replay_iter, None)
        if key is None:
            return None
        if key not in self.seen:
            raise ValueError("replay: a state was not generated before its turn")
        n = self.seen[key]
        if self.policy[n] is None:  # still in the pending batch (the open list never empties)
            self.evaluate()
        return math.nan, n

    def expand(self, n: int) -> bool:
        """Generate n's children (new states only, dead ends dropped); True when one is a goal
        (the result then holds the solution and, √LTS, its bound)."""
        env, tree, rerooter = self.env, self.tree, self.rerooter
        child_terms: Terms = []
        if self.rerooted:
            w = 1.0 if n == 0 else rerooter.weight(n)
            tree.w[n] = w
            self.total_weight += w
            if not self.naive:
                child_terms = add_rerooting_point(self.terms[n], tree.log_prob[n], w)
        state, lp_n, d = tree.states[n], tree.log_prob[n], tree.depth[n] + 1
        pol, a_n = self.policy[n], self.slender[n]
        for act in range(env.num_actions):
            child = env.step(state, act)
            if child is None:
                continue
            key = env.hash(child)
            prev = self.seen.get(key)
            if prev is not None:
                if rerooter is not None:
                    rerooter.revisited(n, prev)
                continue
            if env.is_dead(child):
                continue
            lp_a = pol[act]
            p = math.exp(lp_a)
            t = extend_terms(child_terms, p) if self.rerooted and not self.naive else []
            m = self.new_node(child, n, act, d, lp_n + lp_a, a_n * p + 1.0, t)
            self.seen[key] = m
            if rerooter is not None:
                rerooter.generated(n, m)
            if env.is_goal(child):
                self.solved_at(m)
                return True
            self.pending.append(m)
        return False

    def solved_at(self, goal: int) -> None:
        result, tree = self.result, self.tree
        result.generated = len(tree.states)
        path = _set_solution(result, tree, goal)
        if self.rerooted:
            lps = [tree.log_prob[b] - tree.log_prob[a] for a, b in pairwise(path)]
            ws = [tree.w[k] for k in path[:-1]]
            result.bound = bound_terms(lps, ws, self.total_weight)


def _set_solution(result: SearchResult, tree: SearchTree, goal: int) -> list[int]:
    path = []
    node = goal
    while node >= 0:
        path.append(node)
        node = tree.parent[node]
    path.reverse()
    result.solved = True
    result.states = [tree.states[i] for i in path]
    result.actions = [tree.action[i] for i in path[1:]]
    result.solution_log_prob = tree.log_prob[goal]
    return path


def sqrt_lts(
    env: Environment,
    evaluator: Evaluator,
    rerooter: Rerooter | None,
    budget: int,
    *,
    batch_size: int = 32,
    mix_epsilon: float = 0.0,
    trace: bool = False,
    naive: bool = False,
) -> SearchResult:
    """√LTS: LTS rerooted at every expanded node n_k with weight ``rerooter.weight(n_k)``.

    ``rerooter=None`` (every weight 0 but the root's) expands exactly in the order of
    ``lts(cost="slenderness")``.
    """
    if rerooter is not None and not isinstance(rerooter, Rerooter):
        raise TypeError(f"rerooter must be a Rerooter (or None), got {type(rerooter).__name__}")
    return best_first_search(
        env,
        evaluator,
        budget,
        "rerooted",
        rerooter,
        batch_size=batch_size,
        mix_epsilon=mix_epsilon,
        trace=trace,
        naive=naive,
    )
