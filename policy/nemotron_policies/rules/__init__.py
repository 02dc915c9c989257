"""One module per rule; each exposes one validator (and a config schema when the rule has settings)."""
