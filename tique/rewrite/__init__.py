"""SQL rewriting: pure functions from the application's statement to the statements tique sends.

parse (placeholders -> slots) -> classify -> reads: every transactional table becomes its snapshot ->
writes: the rows a write produces, computed from the snapshot -> a Template (SQL text with slots), cached.
"""
