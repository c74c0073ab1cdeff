"""AgentBeats deployment tooling beside the Amber manifests it checks: the Amber manifest check,
image evidence, the registry client and GHCR preflight, the deploy bundle, evidence assembly."""
