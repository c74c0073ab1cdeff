"""Integrations with the platforms that run this product (AgentBeats)."""
