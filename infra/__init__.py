"""Deployment helpers: the embedded Temporal dev-server launcher and cluster setup scripts."""
