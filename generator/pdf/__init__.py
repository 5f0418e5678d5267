"""Stage 4, PDF production: TeX runs (confined), the format cache, the fonts a paper's
characters need, and a compiled document cut into one PDF per paper.

Cutting each paper's fonts down to its own glyphs (``pdfcut``, ``type1``, ``cff``) is
an optional tier: where it cannot read a font for certain the font stays whole.
"""
