"""The applied side: a golden value written into serve configs (emit, inject, export)."""
