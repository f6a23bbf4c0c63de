"""tsdp.experiments: the paper's privacy-utility experiments (Section 5.2, Appendix "Application to Probabilistic
Forecasting"), `tsdp experiment`: ``grid`` (the cells and their settings), ``cells`` (one training run per cell,
stored atomically), ``table`` (means and standard deviations over seeds, the baselines, claim C7's evidence),
``baselines`` (seasonal naive and AutoETS from statsforecast), ``stored_baselines`` (the baselines once per split,
kept in the grid's folder), ``estimate`` (the time estimate before a grid starts), ``paper_tables`` (the paper's
1-event, w-user, label-perturbation and inference tables), ``reported_claims`` (the paper's utility claims judged
on those tables), ``effects`` (two-way analysis of variance with power: claim C10)."""
