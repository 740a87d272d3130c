"""Input errors that name the file, the object and the field, as users need them."""

from __future__ import annotations


class InputError(ValueError):
    """Bad scenario input: refused before anything runs (``ledgerlet run`` exits 2).

    ``obj`` names the object the way a user finds it again (``objects[3] Pod default/web``,
    ``spec.kubeletConfig``, ``events[7]``); ``field`` is a dotted path inside it.
    """

    def __init__(self, message: str, *, file: str = "", obj: str = "", field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.obj = obj
        self.field = field

    def located(self, *, file: str | None = None, obj: str | None = None, prefix: str = "") -> InputError:
        """The same error with the outer location filled in (inner locations win)."""
        field = self.field
        if prefix:
            field = f"{prefix}.{field}" if field else prefix
        return InputError(
            self.message,
            file=self.file or (file or ""),
            obj=self.obj or (obj or ""),
            field=field,
        )

    def __str__(self) -> str:
        parts = [p for p in (self.file, self.obj, self.field) if p]
        return ": ".join([*parts, self.message])
