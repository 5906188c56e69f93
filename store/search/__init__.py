"""Searching memories as a person types.

- ``index``: the console's search index (rows, fields as bitsets, ranking) over index.db's rows;
- ``arrays``: the numpy pieces every query runs on (bitsets, the vectorised scan of heads, an in-memory
  trigram index for what the persistent one may not hold);
- ``fulltext``: engram's persistent trigram index of memories of plain scopes, a cache beside the root that
  is brought up to date from the files' fingerprints and never holds a sensitive scope's text.
"""
