"""Widgets the panes share or that are big enough to stand alone."""
