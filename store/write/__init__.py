"""The write path's parts below the store: atomic file writes and safe reads, the process that writes a batch's
files beside its rows, retiring files after a change, and the named crash points."""
