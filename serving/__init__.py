"""What every service and command of ours shares at its edge and nothing else (a leaf: stdlib
only): the listening socket, output paths."""
