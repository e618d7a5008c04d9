"""The experts' rankings against a judge's, and the downloadable tables (XLSX, Parquet).

- `rank_correlations(human, judge)`: per criterion both rankings have and per system (Elo,
  Bradley–Terry, Glicko-2, Borda), Kendall's tau-b and Spearman's rho (lib.rankcorr) between
  the two rankings over the models both rank. The rankings compared are the systems' scores
  (the bootstrap mean, else the fit; Borda points), not the stored 1..n ranks: equal scores are
  ties, where the stored ranks would break them by model id. A Bradley–Terry rating of −∞
  (stored null: a model without a win or tie) is −∞ here and ties with another one.
- `rankings_table`, `correlations_table`, `agreement_table`: the rows of the downloads; one
  row per source × criterion × model × system, per judge × criterion × system, per panel ×
  criterion (quality.pairwise.comparison_agreement, the experts' agreement on their labels).
- The downloads: the tables as one .xlsx (lib.xlsx.workbook_bytes: text cells are never
  formulas) or a .zip of one Parquet file per table (lib.arrow.parquet_zip_bytes). The data is
  small (a few hundred rows): it is built in the request.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from comparison.models import Ranking
from comparison.services import SYSTEMS, latest_judge_rankings, latest_ranking, source_names
from lib.rankcorr import kendall_tau_b, spearman
from panels.models import Panel
from quality.pairwise import comparison_agreement

BORDA = "borda"
CORRELATED = (*SYSTEMS, BORDA)


def _score(model: dict[str, Any], system: str) -> float:
    if system == BORDA:
        return float(model["borda"])
    value = model[system]["mean"]
    return -math.inf if value is None else float(value)


def criteria_of(ranking: Ranking) -> dict[str, dict[str, Any]]:
    """The ranking's criteria by key (the stored order)."""
    return {item["key"]: item for item in ranking.result.get("criteria", [])}


def correlation(human: dict[str, Any], judge: dict[str, Any], system: str) -> dict[str, Any]:
    """tau-b and rho of one system between two rankings of one criterion, over the models
    both rank (None where undefined: fewer than two common models or a constant side)."""
    mine = {m["model"]: m for m in human.get("models", [])}
    theirs = {m["model"]: m for m in judge.get("models", [])}
    common = sorted(set(mine) & set(theirs))
    x = [_score(mine[pk], system) for pk in common]
    y = [_score(theirs[pk], system) for pk in common]
    return {
        "system": system,
        "n_models": len(common),
        "kendall_tau_b": kendall_tau_b(x, y),
        "spearman": spearman(x, y),
    }


def rank_correlations(human: Ranking, judge: Ranking) -> list[dict[str, Any]]:
    """Per criterion both rankings have (the experts' order), the correlation of each system."""
    theirs = criteria_of(judge)
    out = []
    for key, item in criteria_of(human).items():
        other = theirs.get(key)
        if other is None:
            continue
        out.append(
            {
                "key": key,
                "systems": [correlation(item, other, system) for system in CORRELATED],
            }
        )
    return out


# ----------------------------------------------------------------------------- the downloads


RANKING_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("source_name", pa.string()),
        ("ranking_id", pa.int64()),
        ("computed_at", pa.string()),
        ("criterion", pa.string()),
        ("model_id", pa.int64()),
        ("model", pa.string()),
        ("n_battles", pa.int64()),
        ("system", pa.string()),
        ("mean", pa.float64()),
        ("low", pa.float64()),
        ("high", pa.float64()),
        ("rank", pa.int64()),
        ("borda", pa.float64()),
        ("borda_rank", pa.int64()),
    ]
)
CORRELATION_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("source_name", pa.string()),
        ("criterion", pa.string()),
        ("system", pa.string()),
        ("n_models", pa.int64()),
        ("kendall_tau_b", pa.float64()),
        ("spearman", pa.float64()),
    ]
)
AGREEMENT_SCHEMA = pa.schema(
    [
        ("panel", pa.string()),
        ("panel_name", pa.string()),
        ("criterion", pa.string()),
        ("items", pa.int64()),
        ("majority_vote_rate", pa.float64()),
        ("unanimity_rate", pa.float64()),
        ("fleiss_kappa", pa.float64()),
        ("krippendorff_alpha", pa.float64()),
    ]
)


def rankings_table(rankings: Iterable[Ranking], names: dict[str, str]) -> pa.Table:
    """One row per source × criterion × model × system (Elo, Bradley–Terry, Glicko-2): the
    system's mean (−∞ is null), interval, rank, and the model's Borda points and rank."""
    rows = []
    for stored in rankings:
        for item in stored.result.get("criteria", []):
            for model in item.get("models", []):
                for system in SYSTEMS:
                    values = model[system]
                    rows.append(
                        {
                            "source": stored.source,
                            "source_name": names.get(stored.source, stored.source),
                            "ranking_id": stored.pk,
                            "computed_at": stored.created_at.isoformat(),
                            "criterion": item["key"],
                            "model_id": model["model"],
                            "model": model["name"],
                            "n_battles": model["n_battles"],
                            "system": system,
                            "mean": values["mean"],
                            "low": values["low"],
                            "high": values["high"],
                            "rank": values["rank"],
                            "borda": model["borda"],
                            "borda_rank": model["borda_rank"],
                        }
                    )
    return pa.Table.from_pylist(rows, schema=RANKING_SCHEMA)


def correlations_table(
    human: Ranking | None, judges: Iterable[Ranking], names: dict[str, str]
) -> pa.Table:
    """One row per judge source × criterion × system: tau-b and rho against the experts."""
    rows = []
    if human is not None:
        for judge in judges:
            for item in rank_correlations(human, judge):
                for corr in item["systems"]:
                    rows.append(
                        {
                            "source": judge.source,
                            "source_name": names.get(judge.source, judge.source),
                            "criterion": item["key"],
                            **corr,
                        }
                    )
    return pa.Table.from_pylist(rows, schema=CORRELATION_SCHEMA)


def agreement_table(panels: Iterable[Panel]) -> pa.Table:
    """One row per panel × criterion: the experts' agreement on their side-by-side labels."""
    rows = []
    for panel in panels:
        for key, numbers in comparison_agreement(panel).items():
            rows.append(
                {
                    "panel": panel.key,
                    "panel_name": str(panel),
                    "criterion": key,
                    "items": numbers.items,
                    "majority_vote_rate": numbers.majority_vote_rate,
                    "unanimity_rate": numbers.unanimity_rate,
                    "fleiss_kappa": numbers.fleiss_kappa,
                    "krippendorff_alpha": numbers.krippendorff_alpha,
                }
            )
    return pa.Table.from_pylist(rows, schema=AGREEMENT_SCHEMA)


README = [
    ("Pollux Studio model rankings", "Side-by-side (REPA) rankings, latest per source."),
    (
        "Sheet rankings",
        "One row per source × criterion × model × system (elo, bradley_terry, glicko2): "
        "the bootstrap mean with its 2.5–97.5 % interval (empty: −∞ or no bootstrap), the rank, "
        "and the model's Borda points and rank.",
    ),
    (
        "Sheet rank_correlation",
        "Kendall's tau-b and Spearman's rho between the experts' ranking and each judge's, per "
        "criterion and system, over the models both rank (empty: undefined).",
    ),
    (
        "Sheet agreement",
        "The experts' agreement on their labels per panel and criterion (complete items): "
        "majority-vote rate, unanimity rate, Fleiss' kappa, Krippendorff's alpha (nominal).",
    ),
]


def download_tables(panels: Iterable[Panel]) -> dict[str, pa.Table]:
    """The latest rankings (the experts' and each judge's), the judges' rank correlations with
    the experts, and the agreement of the given panels (those the user may see)."""
    human = latest_ranking()
    judges = latest_judge_rankings()
    names = source_names()
    return {
        "rankings": rankings_table([r for r in (human, *judges) if r is not None], names),
        "rank_correlation": correlations_table(human, judges, names),
        "agreement": agreement_table(panels),
    }
