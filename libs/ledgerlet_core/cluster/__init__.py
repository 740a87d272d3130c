"""The cluster folded from its events: one pure view of what exists for every control loop
(:mod:`.view`), and one pod's life as the API server held it for the readers (:mod:`.pod_history`)."""
