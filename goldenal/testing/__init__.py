"""Test support shipped with the package: synthetic runs in real formats."""
