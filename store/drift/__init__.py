"""Files against index.db: walking the files, finding drift, repairing it, rebuilding the index."""
