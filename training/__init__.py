"""tsdp.training: the DP-SGD forecasting loop, Algorithms 1-6 of the paper as torch code: samplers, the noisy step,
models, metrics, training (its series come from tsdp.datasets).

Modules: ``samplers`` (Algorithms 3-6, shuffle, Poisson, pooled; vectorised over steps),
``windows`` (padding, cropping, context/forecast split, augmentation), ``step``
(Algorithm 2: the noisy gradient and update), ``clipping`` (norms and clipping of per-sample
gradients), ``factored`` (exact per-sample clipping from layer factors; its parts ``parameter_owners``,
``call_recorder``, ``linear_factors``, ``per_sample_rules``, ``layer_factors``), ``models`` (Student-t
forecasters, and the benchmark's plain MLP; DeepAR in ``deepar``, the law in ``student_t``, inputs and scalers
in ``observations``), ``metrics``, ``train`` (Algorithm 1 to an ε budget; `tsdp train` is tsdp/cli/cmd_train.py)
and the modules it is made of: ``options`` (its ``Budget``, ``Loop``, ``Evaluation`` and ``Checkpoints``),
``plan`` (its checks and the accountant's plan), ``loop`` (the phases and steps), ``evaluation``,
``checkpoints``, ``run_checks``, ``result``; ``noise`` (Algorithm 2, line 8: one flat Gaussian draw),
``generators`` (a run's random streams: every bit of its seed, one stream per use),
``batch_sampler`` (the bi-level samplers as a torch ``BatchSampler`` for your own ``DataLoader``),
``fixed_batch`` (every step's batch in one capacity, Poisson's certified against overflow), ``captured``
(the whole DP step compiled, CUDA graphs on CUDA; the loop's step paths).
"""
from .clipping import clip_gradients
from .samplers import BiLevelSampler, TopBatch, WindowIndex, make_sampler
from .step import apply_gradient, dp_step, per_sample_gradients, private_gradient
from .options import Budget, Checkpoints, Evaluation, Loop
from .train import train

__all__ = [
    "BiLevelSampler", "TopBatch", "WindowIndex", "make_sampler",
    "apply_gradient", "clip_gradients", "dp_step", "per_sample_gradients", "private_gradient",
    "Budget", "Checkpoints", "Evaluation", "Loop", "train",
]
