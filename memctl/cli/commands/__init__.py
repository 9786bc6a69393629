"""One module per command or group; each has a `register(app)`."""
