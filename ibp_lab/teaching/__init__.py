"""Teaching: what the book shows on top of the algorithms.

Modules here may import every other wing; nothing below imports them.

- :mod:`ibp_lab.teaching.lab`: one source for the web book and JupyterLab (quoted
  numbers, skipped solutions).
- :mod:`ibp_lab.teaching.captions`: figure captions under the figures in JupyterLab.
- :mod:`ibp_lab.teaching.explorers`: the computations behind the explorers.
- :mod:`ibp_lab.teaching.widgets`: the explorers, live and precomputed.
- :mod:`ibp_lab.teaching.plotting`: the book's figures.
- :mod:`ibp_lab.teaching.exercises`: self-checking exercises.
- :mod:`ibp_lab.teaching.reports`: the samplers' timings and the book's tables.
"""
