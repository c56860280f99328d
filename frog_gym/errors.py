"""Every error frog-gym raises on purpose. Each says what was wrong, shows the value, and how to fix it.

Inside an episode a bad action is an observation, never one of these; these are for the people who set
frog-gym up (a broken spec, a missing sandbox tool, a hash mismatch).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class FrogGymError(Exception):
    """Base class of frog-gym's own errors."""


class UsageError(FrogGymError):
    """A command was called wrongly: a missing or malformed input file, an output path of the wrong kind, a
    name that matches nothing. The CLI prints the message as one line and exits 2."""


class SpecError(FrogGymError):
    """A repository spec or task record is malformed. The message names the file and the field."""

    def __init__(self, file: str, field: str, problem: str):
        self.file, self.field, self.problem = file, field, problem
        super().__init__(f"{file}: field '{field}': {problem}")


class HashMismatchError(FrogGymError):
    """A downloaded source does not have the sha256 its spec pins."""


class SourceError(FrogGymError):
    """A repository source could not be fetched, unpacked or built."""


class OfflineError(SourceError):
    """A download was needed while FROG_GYM_OFFLINE=1 forbids the network."""


class RefusedError(FrogGymError):
    """``frog-gym registry add`` refused a repository: no tests, a suite over budget, nothing passing."""


class SandboxUnavailableError(FrogGymError):
    """The sandbox backend cannot run on this machine (for example bubblewrap is missing)."""


class SandboxError(FrogGymError):
    """The sandbox failed in a way that is not the agent's fault (an infrastructure failure)."""


class UnknownNameError(FrogGymError, KeyError):
    """A name (repository, task, suite, agent) that frog-gym does not know."""

    def __init__(self, kind: str, name: str, known: Iterable[str], hint: str = ""):
        known = sorted(known)
        close = difflib.get_close_matches(name, known, n=1)
        msg = f"Unknown {kind} '{name}'."
        if close:
            msg += f" Did you mean '{close[0]}'?"
        if hint:
            msg += f" {hint}"
        self.kind, self.name = kind, name
        super().__init__(msg)

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """A " Did you mean 'x'?" suffix, or an empty string.

    >>> did_you_mean("flsk", ["flask", "click"])
    " Did you mean 'flask'?"
    """
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" Did you mean '{close[0]}'?" if close else ""
