"""Monte Carlo experiments, one per claim family, and the claim registry behind `spectheory verify`."""
