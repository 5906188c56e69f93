"""Textual stylesheets (``.tcss``) shipped with engram."""
