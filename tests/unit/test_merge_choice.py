"""The merge path's choice (forgetmap.analysis.merge_choice) on a hand-made sweep."""

import pytest
from forgetmap.analysis.merge_choice import MixScore, best_mix

pytestmark = pytest.mark.unit

# mix: F_true, BT_true, F_true interval
SWEEP = [
    MixScore(0.0, 0.0, 0.0, 0.0, 0.01),
    MixScore(0.25, 0.01, 0.02, 0.0, 0.03),
    MixScore(0.5, 0.03, 0.08, 0.01, 0.05),
    MixScore(0.75, 0.09, 0.12, 0.06, 0.12),
    MixScore(1.0, 0.18, 0.13, 0.14, 0.22),
]


def test_forget_least_keeping_a_share_of_the_gains():
    # 90% of 0.13 is 0.117: only 0.75 and 1 keep it; 0.75 forgets less, its interval below
    chosen = best_mix(SWEEP, keep_gains=0.9)
    assert chosen.mix == 0.75 and chosen.beats_post
    assert "beats the post model beyond noise" in chosen.reason
    # half the gains (0.065): 0.5 qualifies and forgets least
    assert best_mix(SWEEP, keep_gains=0.5).mix == 0.5
    # no gain asked for: the base itself forgets least
    assert best_mix(SWEEP).mix == 0.0


def test_net_and_the_post_model_itself():
    # net: 0 .01 .05 .03 -.05 -> 0.5
    assert best_mix(SWEEP, objective="net").mix == 0.5
    # keep everything: only the post model keeps all of its gains
    only = best_mix(SWEEP, keep_gains=1.0)
    assert only.mix == 1.0 and not only.beats_post and "no mix does better" in only.reason


def test_overlapping_intervals_are_not_beyond_noise():
    sweep = [MixScore(0.5, 0.10, 0.2, 0.05, 0.16), MixScore(1.0, 0.15, 0.2, 0.12, 0.18)]
    chosen = best_mix(sweep, keep_gains=1.0)
    assert chosen.mix == 0.5 and not chosen.beats_post
    assert "intervals overlap" in chosen.reason


def test_what_cannot_be_chosen():
    nothing = best_mix(
        [MixScore(0.5, 0.0, 0.0, 0.0, 0.0), MixScore(1.0, 0.2, 0.3, 0.1, 0.3)], keep_gains=0.5
    )
    assert nothing.mix == 1.0  # the post model keeps its own gains
    with pytest.raises(ValueError, match="needs mix 1"):
        best_mix([MixScore(0.5, 0.1, 0.1, 0.0, 0.2)])
    with pytest.raises(ValueError, match="scored once"):
        best_mix([SWEEP[4], SWEEP[4]])
    with pytest.raises(ValueError, match="outside its interval"):
        MixScore(0.5, 0.3, 0.1, 0.0, 0.2)
    with pytest.raises(ValueError, match="from 0 to 1"):
        MixScore(1.5, 0.1, 0.1, 0.0, 0.2)
    with pytest.raises(ValueError, match="share of the post model's gains"):
        best_mix(SWEEP, keep_gains=2.0)
