"""Decision records: what a decision module's result becomes in the decision log (scenario spec §5)."""
