"""VAR-SR."""
