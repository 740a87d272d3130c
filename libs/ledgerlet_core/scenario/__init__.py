"""Scenario files: loaded and checked, turned into the input events a run is fed, and imported from recordings."""
