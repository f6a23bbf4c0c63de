"""Inference-time privacy (paper Appendix H, T15): the mechanism (``mechanism``) and the CRPS of private forecasts by
ε and keep rate (``crps_table``); the tests audit the mechanism through its real torch path (``tests/mechanism_audit.py``).
"""
