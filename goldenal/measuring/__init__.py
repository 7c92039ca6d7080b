"""The measured side's live half: drive a server (measure) and check a pinned run (verify)."""
