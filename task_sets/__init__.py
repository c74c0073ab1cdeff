"""Task folders (``task``), task-set manifests (``manifest``, ``digest``, ``excluded``), the
assessment config and task selection (``config``), and their commands (``cli``)."""
