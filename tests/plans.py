"""Strategy settings shared by the tests."""

OUTRIGHT = {"name": "planned", "cm_anneal": False, "base_share": 0.0, "independence_prior": False,
            "histogram_share": 0.0, "numeric_coupling": "fitted"}
"""The planned strategy measuring every CM table outright, with no base marginals, no numeric
histograms, no prior for tables a selection round leaves unmeasured and each decoded row keeping
its relaxed row's numerics: the default until the annealed, mediated one
(bench/results/ablation_mediated_prior.md), bit for bit. Tests of the
outright and selection plans' mechanics pin it."""

OUTRIGHT_KEYWORDS = {key: value for key, value in OUTRIGHT.items() if key != "name"}
"""The same as PlannedStrategy keywords."""

ANNEALED_ONLY = {**OUTRIGHT, "cm_anneal": True, "cm_anneal_selection_share": None, "cm_outright_l1": None}
"""AIM's budget annealing of the CM share alone (bench/results/ablation_cm_anneal.md): no base
marginals, no prior for the unmeasured tables, the run's selection share, always annealed.
Tests of the annealing's own mechanics pin it."""

ANNEALED_ONLY_KEYWORDS = {key: value for key, value in ANNEALED_ONLY.items() if key != "name"}
"""The same as PlannedStrategy keywords."""
