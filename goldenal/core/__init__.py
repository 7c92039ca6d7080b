"""The base every layer stands on: errors, files, the YAML composer, value types."""
