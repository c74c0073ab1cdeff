"""What every service of ours shares at its edge and nothing else (a leaf: stdlib only)."""
