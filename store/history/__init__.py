"""Every version of every memory file: a git repository per root (:mod:`.repo`) kept current by :mod:`.keeper`,
and what a person does with it (:mod:`.ops`: list, diff, restore)."""
