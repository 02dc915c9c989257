"""One finding: a line a person can act on, naming the resource. Blocking ones fail the render."""

from __future__ import annotations

from dataclasses import dataclass

WAIT = "wait"  # a wait that can expire before what it waits for is done
REPLACE = "replace"  # a replacement that collides with itself or that protect refuses
DESTROY = "destroy"  # what `pulumi destroy` does that the stack may not intend
SERVE = "serve"  # `up` succeeds before the thing serves
RESTART = "restart"  # running pods keep old values when what they read is replaced


@dataclass(frozen=True, order=True)
class Finding:
    category: str
    resource: str
    message: str
    blocking: bool

    def line(self) -> str:
        level = "error" if self.blocking else "warning"
        return f"{level}: [{self.category}] {self.resource}: {self.message}"
