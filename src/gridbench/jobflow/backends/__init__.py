"""Backends: how jobs reach a scheduler (local, reference, slurm, sge, command, psij, ...).

A regular package (not a namespace one) so that import-linter sees it as a layer member.
"""
