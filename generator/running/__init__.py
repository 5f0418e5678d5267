"""Running: the options of a run and its one front door (``api.generate``), the stages
wired (``pipeline``), the output folder and its atomic commit, progress, the inputs a
run reads, installed plugins, and the speed machinery (``forked``, ``lockstep``), which
no module of the mathematics, the question types, rendering or formats imports.
"""
