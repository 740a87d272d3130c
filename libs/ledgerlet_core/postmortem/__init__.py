"""Post-mortem logic over recorded events: verification, what-if diffs, explanations.

Pure like the rest of the core: the services read the store and hand events in.
"""
