"""What every control loop is made of, kept pure: the emitter that places what a loop
decides in the causal order, its requests for clock ticks, and dispatch by event type."""
