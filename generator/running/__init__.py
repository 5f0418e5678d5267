"""Running: the options of a run and its one front door (``api.generate``), the stages
wired (``pipeline``), the output folder and its atomic commit, progress, the inputs a
run reads, installed plugins, and the speed machinery behind one ``scheduler`` (with
``forked``, ``lockstep`` and the ``work_folder`` sink), which no module of the mathematics,
the question types, rendering or formats imports (tests/test_architecture.py).
"""
