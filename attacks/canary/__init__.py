"""Canary audits: of a tsdp model trained by the loop (``trained_model``), of your own training
function (``user_training``; ``spikes`` places the black-box spike canaries), of DP-SGD's updates
with white-box gradient canaries (``gradient``; in tsdp's loop ``whitebox``); ``evidence`` pools
runs' scores and inclusion bits and certifies them with a plug-in certifier, ``steinke_bound``
by default (Steinke, Nasr & Jagielski 2023); ``runs`` trains many times on the sharded engine.
"""
