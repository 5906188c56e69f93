"""engram's user interfaces: the Textual console and the command line. No SQL and no file I/O here:
everything goes through ``store``."""
