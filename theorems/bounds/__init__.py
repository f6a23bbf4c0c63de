"""The catalogue's bounds, one module per paper section."""
