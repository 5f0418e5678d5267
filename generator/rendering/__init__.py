"""Stage 3, rendering: solved questions laid out as papers and keys, their prose and
numbers printed per format (LaTeX, Markdown, HTML), the hints, and the teacher's
template folder read before the built-in templates.

Renderers are plain functions of laid-out sets; where their text goes (a string, a
file in the work folder, TeX's input) is the caller's.
"""
