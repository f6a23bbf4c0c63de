"""Inference-time privacy (paper Appendix H, T15): the mechanism (``mechanism``), its Monte Carlo
audit (``audit``), and the CRPS of private forecasts by ε and keep rate (``crps_table``).
"""
