"""The repository as a whole: import layers, the lock, the wheel, repo2docker, the JupyterLab set-
up, the classroom server, bad input across layers.
"""
