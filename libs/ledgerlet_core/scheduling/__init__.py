"""The kube-scheduler and the API server's pod admission, as pure functions.

Upstream: ``pkg/scheduler`` (queue, filters, scores, DefaultPreemption) and the
``Priority``, ``RuntimeClass``, ``DefaultTolerationSeconds`` and ``ResourceQuota``
admission plugins. The service shell (:mod:`ledgerlet_services.loops.scheduler`) folds events
into these structures and publishes what they decide.
"""
