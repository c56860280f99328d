"""Agents that act in FrogSWE episodes, and the protocol every agent follows."""
