"""The resident server: one process per store that keeps the model, the index and the command
code loaded, so hot commands (`recall`, `add`, `context`, `hook claude-code`, `index`) answer in
tens of milliseconds.

`client` is what `memctl` runs first: it forwards a command line to the store's server over a
Unix socket and prints the reply, importing nothing heavy; `daemon` is the server itself;
`freshness` keeps its index current from a watchdog observer. The command code run inside the
server is the CLI's own, handed over by `memctl serve`, so answers are byte-identical.

This package's `__init__` stays empty: the client path must import as little as possible.
"""
