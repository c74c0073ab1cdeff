"""Agents that act in a trial's sandbox."""
