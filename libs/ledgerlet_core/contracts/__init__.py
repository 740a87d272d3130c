"""The events loops exchange and the records they decide: versioned contracts (scenario spec §5, contracts/)."""
