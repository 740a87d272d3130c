"""The kube-scheduler: its cache, queue, filters, scores and DefaultPreemption, as pure
code (``pkg/scheduler``). Admission is the API server's (:mod:`ledgerlet_core.apiserver`)."""
