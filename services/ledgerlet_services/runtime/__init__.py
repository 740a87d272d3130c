"""The shell every control loop runs in, and the embedded and distributed ways to run them."""
