"""The write path's parts below the store: atomic file writes and safe reads, retiring files after a change, and
the named crash points."""
