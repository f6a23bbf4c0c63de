"""The DP-SGD forecasting loop (``attacks.loop``) and the auditors that attack it; the only torch users."""
