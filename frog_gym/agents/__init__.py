"""Agents that act in FrogSWE episodes, and the protocol every agent follows.

May import: frog_gym.errors, frog_gym.catalog, frog_gym.env, frog_gym.generators.
"""
