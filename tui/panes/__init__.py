"""The console's panes, one module each."""
