"""Modal screens of the console: prompts, the editor, the memory picker, help."""
