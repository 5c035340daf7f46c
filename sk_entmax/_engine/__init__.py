"""The training engine the estimators share: skorch's net, its callbacks, the solvers.

- ``net``: :class:`FenchelYoungNet`, the skorch ``NeuralNet`` that trains a network with its
  head's Fenchel-Young loss, and :class:`NonFiniteLossError`;
- ``training``: the plan of a fit (:class:`TrainingPlan`) and the net it builds;
- ``callbacks``: the stopping rule, the best weights so far, the finite-loss check and the
  progress line;
- ``solver`` and ``lbfgs``: the full-batch L-BFGS path of the linear estimators and its
  outcome;
- ``threads`` and ``device``: the thread count (``n_jobs``) and the device a fit runs on;
- ``inference``: the trained network's scores, in row blocks, for the predict methods;
- ``distributed``: data-parallel training over processes, as a callback.

What the engine asks of a network's modules beyond ``loss`` and ``proba`` is declared in
:class:`sk_entmax.nn.protocols.EngineModule` (``settling``, ``selection_reduce``,
``selection_processes``), read by ``isinstance``, never by an attribute's name.

Nothing here knows an estimator family: the estimators (``_base``, ``_classifier``,
``_linear``, ``_tabnet``) call in, and these modules import only the core, the networks and
skorch.
"""
