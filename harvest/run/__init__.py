"""`harvest run --with`: the target re-run with edited kernel modules in place of Inductor's, checked end to end."""
