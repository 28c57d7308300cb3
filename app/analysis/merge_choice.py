"""The merge path's choice, the pure part (issue 54, point 4): which mix of a sweep forgets least
while keeping at least a share of the post model's gains, or gives the best net transfer, and
whether it beats the post model beyond noise.

Each mix of a sweep is scored against the base like a pair of its own (F_true, BT_true and their
paired 95% intervals, ``forgetmap.core.metrics`` and ``forgetmap.analysis.adaptive``); mix 1 is
the post model, mix 0 the base (no forgetting and no gains: never chosen unless no gain is
asked for).

- ``objective="forget_least"``: among the mixes whose BT_true is at least ``keep_gains`` times
  the post model's, the one with the lowest F_true (a tie goes to the larger mix, nearer the post
  model);
- ``objective="net"``: the mix with the highest BT_true - F_true (a tie: the larger mix).

The choice **beats the post model beyond noise** when its F_true interval lies wholly below the
post model's (their intervals do not overlap); otherwise the sweep found no mix that forgets less
than the post model by more than its seeds' noise, and the choice says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Objective = Literal["forget_least", "net"]


@dataclass(frozen=True)
class MixScore:
    """One mix's scores against the base, with the paired 95% intervals."""

    mix: float
    f_true: float
    bt_true: float
    f_low: float
    f_high: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.mix <= 1.0:
            raise ValueError(f"a mix is the post model's share, from 0 to 1; got {self.mix}")
        if not self.f_low <= self.f_true <= self.f_high:
            raise ValueError(f"mix {self.mix:g}: F_true {self.f_true} is outside its interval")


@dataclass(frozen=True)
class MixChoice:
    """The chosen mix, whether it beats the post model beyond noise, and a sentence saying why."""

    mix: float
    beats_post: bool
    reason: str


def best_mix(
    scores: Sequence[MixScore], *, objective: Objective = "forget_least", keep_gains: float = 0.0
) -> MixChoice:
    """The mix ``objective`` picks among ``scores`` (module docstring); ``keep_gains`` (0 to 1)
    is the least share of the post model's BT_true a mix must keep (``forget_least`` only)."""
    by_mix = {s.mix: s for s in scores}
    if len(by_mix) != len(scores):
        raise ValueError("each mix may be scored once")
    if 1.0 not in by_mix:
        raise ValueError("the sweep needs mix 1 (the post model) to compare against")
    if not 0.0 <= keep_gains <= 1.0:
        raise ValueError(
            f"keep_gains is a share of the post model's gains, 0 to 1; got {keep_gains}"
        )
    post = by_mix[1.0]
    if objective == "forget_least":
        least = keep_gains * post.bt_true
        # the post model always qualifies (keep_gains <= 1): there is always a choice
        kept = [s for s in scores if s.bt_true >= least and (s.mix > 0.0 or least <= 0.0)]
        chosen = min(kept, key=lambda s: (s.f_true, -s.mix))
        rule = f"lowest F_true keeping {keep_gains:.0%} of the gains"
    elif objective == "net":
        chosen = max(scores, key=lambda s: (s.bt_true - s.f_true, s.mix))
        rule = "highest BT_true - F_true"
    else:
        raise ValueError(f"objective must be forget_least or net, got {objective!r}")
    if chosen.mix == 1.0:
        return MixChoice(1.0, False, f"{rule}: the post model itself; no mix does better")
    beats = chosen.f_high < post.f_low
    verdict = (
        "beats the post model beyond noise"
        if beats
        else "does not beat the post model beyond noise (the F_true intervals overlap)"
    )
    return MixChoice(
        chosen.mix,
        beats,
        f"{rule}: mix {chosen.mix:g} (F_true {chosen.f_true:.3f} "
        f"[{chosen.f_low:.3f}, {chosen.f_high:.3f}] against the post model's {post.f_true:.3f} "
        f"[{post.f_low:.3f}, {post.f_high:.3f}]) {verdict}",
    )
