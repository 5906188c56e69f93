"""engram's store: everything that reads or changes a memoryd data root.

Nothing in this package imports Textual; the TUI and the CLI call it.
"""
