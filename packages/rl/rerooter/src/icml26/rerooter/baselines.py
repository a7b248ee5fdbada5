"""The searches √LTS is compared against, on the same engine (``search.best_first_search``), the
same evaluator and the same expansion budget: Levin tree search (LTS: ``d(n) / pi(n)``, or its
slenderness cost, the root term of √LTS) and PHS* (LTS with a heuristic). The learned baselines
are these searches trained by the same bootstrap loop (``bootstrap.py``)."""

from typing import Literal

from icml26.rerooter.environment import Environment
from icml26.rerooter.evaluators import Evaluator
from icml26.rerooter.search import SearchResult, best_first_search


def lts(
    env: Environment,
    evaluator: Evaluator,
    budget: int,
    *,
    cost: Literal["d_pi", "slenderness"] = "d_pi",
    batch_size: int = 32,
    mix_epsilon: float = 0.0,
    trace: bool = False,
) -> SearchResult:
    """Levin tree search: expand in increasing ``d(n) / pi(n)`` (``cost="d_pi"``, Orseau et al.
    2018) or in increasing slenderness ``lambda(n; root)`` (``cost="slenderness"``, the root term
    of √LTS). At most ``budget`` expansions.
    """
    if cost not in ("d_pi", "slenderness"):
        raise ValueError(f"cost must be 'd_pi' or 'slenderness', got {cost!r}")
    return best_first_search(
        env, evaluator, budget, cost, batch_size=batch_size, mix_epsilon=mix_epsilon, trace=trace
    )


def phs_star(
    env: Environment,
    evaluator: Evaluator,
    budget: int,
    *,
    batch_size: int = 32,
    mix_epsilon: float = 0.0,
    trace: bool = False,
) -> SearchResult:
    """PHS* (Orseau & Lelis 2021): ``log phi(n) = log(g + h) - (1 + h/g) log pi(n)``, g = d(n)."""
    return best_first_search(
        env,
        evaluator,
        budget,
        "phs_star",
        batch_size=batch_size,
        mix_epsilon=mix_epsilon,
        trace=trace,
    )
