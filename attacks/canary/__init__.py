"""One-run canary audits: of a tsdp model trained by the loop (``trained_model``), of your own
training function (``user_training``); ``spikes`` places the canaries, ``steinke_bound``
certifies a lower bound on ε from the guesses (Steinke, Nasr & Jagielski 2023).
"""
