"""Mission Control: the operator's web console (docs/architecture.md "Mission Control").

Server-rendered pages (FastAPI + Jinja2, no front-end build), each with a JSON twin under ``/api``.
It uses the same Temporal client, store and proofs as the CLI; a signed-in person acts through a
session key their own key delegated to (:mod:`control.web.sessions`).
"""
