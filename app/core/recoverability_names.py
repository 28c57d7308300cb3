"""Names and defaults of the recoverability analysis that its request body, the analysis
(forgetmap.analysis.recoverability_fitting) and the worker share (a leaf module: imports
nothing)."""

# the known-answer controls built from the base (worker/recoverability_scoring.py builds them)
CONTROLS = ("planted_bias", "doubled_logits", "weight_noise")
DEFAULT_K = 4096  # bias tokens: the K most frequent targets on FIT
DEFAULT_MAX_TOKENS = 2047  # document tokens kept after BOS

# asking the model again (forgetmap.analysis.probe, forgetmap.contract.probe)
FORCED_ANSWER = "\nTherefore, the answer is ("  # the option's letter is scored after the bracket
FINAL_ANSWER = "\nTherefore, the final answer is "  # a generative item's short answer follows
ANSWER_TOKENS = 16  # tokens a generative item's regenerated answer may take
PROBE_ARMS = ("flips", "shuffled", "kept", "base")  # the flips, then the probe's three controls

# a judge's forced choice (forgetmap.analysis.probe.judge_context, forgetmap.contract.judge)
JUDGE_TEMPLATE = (
    "{prompt}{answer}\n\n"
    "Question for the reader: which option does the answer above commit to? Reply with its "
    "letter, or 0 if it commits to none of them.\nThe answer commits to option ("
)
NO_OPTION_LABEL = "0"  # the judge's label for "none of the options"
