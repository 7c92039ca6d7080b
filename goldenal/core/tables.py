"""Notebook display shared by the result objects that have a table."""

import html


class Tabular:
    """A result with ``to_frame()``, shown in notebooks as its repr above that table."""

    __slots__ = ()

    @property
    def summary(self):
        """Same as ``to_frame()``."""
        return self.to_frame()

    def _repr_html_(self):
        return f"<p>{html.escape(repr(self))}</p>" + self.to_frame().to_html()
