"""Code the book uses that the library does not need: each page's figures, explorers and helpers
(:mod:`.chapters`), what several pages share (:mod:`.deep_stack`, :mod:`.phone_and_desktop`,
:mod:`.explorers`), the result views (:mod:`.results`), benchmark helpers and a headless browser."""
