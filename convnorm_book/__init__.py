"""Code the book uses that the library does not need: figures, explorers, result views, benchmark helpers."""
