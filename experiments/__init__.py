"""The paper's privacy-utility experiments (Section 5.2, Appendix "Application to Probabilistic Forecasting"):
``grid`` (the cells and their settings), ``cells`` (one training run per cell, stored atomically),
``table`` (means and standard deviations over seeds, the baselines, claim C7's evidence)."""
