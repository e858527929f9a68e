"""The build step's errors: one base class, a subclass per kind of problem a user can fix.

``ExportError``: the checkpoint cannot be exported, or the destination is not usable (``build.export``).
``CheckpointError`` and its subclasses: a checkpoint's variables do not match what its configuration declares
(each names the variable and what was expected). ``build.verify.VerificationError`` (a graph that does not
match its reference) stays beside the checks.
"""

from __future__ import annotations


class ExportError(Exception):
    """The checkpoint cannot be exported, or the destination is not usable."""


class CheckpointError(ExportError):
    """A checkpoint's files or variables do not match what its configuration declares."""


class MissingVariableError(CheckpointError):
    """An inference variable the configuration implies is not in the checkpoint."""


class MisshapenVariableError(CheckpointError):
    """A variable's shape (or dtype) differs from what the configuration implies."""


class UnexpectedVariableError(CheckpointError):
    """The checkpoint holds an inference variable the configuration does not account for."""


class UnsupportedModelError(ExportError):
    """The configuration asks for a variant of the architecture the exporter does not implement."""
