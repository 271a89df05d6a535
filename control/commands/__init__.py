"""The ``specialists`` command groups, one module each; :mod:`control.cli` assembles them.

Every group imports its shared options and openers from :mod:`control.commands.common` and nothing
from :mod:`control.cli`. Annotations in the group modules are evaluated at import (no ``from
__future__ import annotations``): Typer reads each command's signature when it builds the command,
and string annotations would be evaluated again on every invocation.
"""
