"""Hand-made recoverability uploads (no torch): per-document loss sums with known shares.

Five documents: three FIT (two fit_train, one fit_select) and two EVAL with 10 and 30 tokens.
On EVAL: L_base = 80/40 = 2.0, L_post = 120/40 = 3.0 (gap 1.0); the bias correction brings the
post model to 100/40 = 2.5 (share 0.5) and the base to 76/40 = 1.9, so the symmetric share is
(0.5 - 0.1) / 1.0 = 0.4. Every other column is a fixed fraction of the uncorrected one.
"""

from __future__ import annotations

from forgetmap.analysis.recoverability_fitting import ALL_CORRECTIONS
from forgetmap.services.recovery import CONTROLS

N_TOKENS = [12, 8, 16, 10, 30]
SPLITS = ["fit_train", "fit_train", "fit_select", "eval", "eval"]
BASE_NONE = [24.0, 16.0, 32.0, 20.0, 60.0]
POST_NONE = [36.0, 24.0, 48.0, 30.0, 90.0]
POST_BIAS = [30.0, 20.0, 40.0, 25.0, 75.0]
BASE_BIAS = [22.8, 15.2, 30.4, 19.0, 57.0]
FRACTION = {"none": 1.0, "bias": None, "temp": 0.9, "bias_temp": 0.85, "closed_bias": 0.95}


def table(controls=CONTROLS) -> dict[str, list]:
    t: dict[str, list] = {
        "doc_id": [f"doc <{i}>" for i in range(5)],
        "split": list(SPLITS),
        "n_tokens": list(N_TOKENS),
    }
    for model in ("base", "post", *controls):
        none = BASE_NONE if model == "base" else POST_NONE
        for c in ALL_CORRECTIONS:
            if c == "bias":
                values = BASE_BIAS if model == "base" else POST_BIAS
            else:
                values = [v * FRACTION[c] for v in none]
            t[f"{model}/{c}"] = list(values)
    return t


def upload(controls=CONTROLS) -> dict:
    models = ("base", "post", *controls)
    return {
        "table": table(controls),
        "corrections": {
            m: {
                c: {"kind": c, "temperature": 1.5 if "temp" in c else 1.0}
                for c in ALL_CORRECTIONS
                if c != "none"
            }
            for m in models
        },
        "controls": {c: {"kind": c} for c in controls},
        "timing": {m: {"score_s": 0.1, "fit_s": 0.2} for m in models},
        "config": {
            "k": 4096,
            "n_bias_tokens": 300,
            "n_docs": 5,
            "n_tokens": sum(N_TOKENS),
            "split_docs": {"fit_train": 2, "fit_select": 1, "eval": 2},
            "split_tokens": {"fit_train": 20, "fit_select": 16, "eval": 40},
        },
    }
