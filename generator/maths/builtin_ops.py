"""The built-in ops, each assembled from its faces (see ``ops``) in one place.

Each face is defined where its kind of work lives (the engine's exact arithmetic, the
cross-check's numpy, marking's tolerance rules and slips, the hints' first lines, the
paper's times, the steps' shape rules, the page's JavaScript in templates/html/ops/);
this module only puts one op's faces together.  It is imported by ``ops.registered`` on
the registry's first use, never by the modules whose faces it assembles.
"""

from __future__ import annotations

from dataclasses import replace

from generator.maths import crosscheck, engine, marking, steps
from generator.maths.ops import (
    DEFAULT_TEMPLATES,
    NO_SCRIPT,
    Op,
    not_computed,
    register_op,
    script_file,
    working_templates,
)
from generator.rendering import hints, paper


def built_in(name: str, exact, numeric, tolerance, hint, seconds, drawn_by_own=True, **faces) -> Op:
    """A built-in op: its script in templates/html/ops/<name>.js, its working drawn by
    steps/<name> (``drawn_by_own``) or else by steps/default."""
    return Op(name, exact, numeric, tolerance, hint, seconds,
              working_templates(name) if drawn_by_own else DEFAULT_TEMPLATES, script_file(name),
              **faces)


PRODUCT = built_in(
    "product", engine.product_op, crosscheck.numpy_product, marking.product_tolerance,
    # the first entry named once, by the working's Q[1,1] after it, not also as "entry (1, 1)"
    hints.OpHint("{{ row }} 1 of ${{ a }}$ dotted with {{ col }} 1 of ${{ b }}$ gives the first entry; "
                 "the others likewise.", hints.product_first),
    paper.product_seconds, shape=steps.product_shape, slips=marking.product_slips)

# In the order of the page's OPS table (its script is compared byte for byte between runs).
for _op in (
    Op("given", engine.given_op, not_computed, not_computed,
       hints.OpHint("take this head's block of columns (head 1 the first half)."),
       paper.copy_seconds, DEFAULT_TEMPLATES, NO_SCRIPT),
    PRODUCT,
    built_in("scaling", engine.scaling_op, crosscheck.numpy_scaling, marking.scaling_tolerance,
             hints.OpHint("scale every entry of ${{ a }}$ alike: divide it by $\\sqrt{d_k}$ (or "
                          "multiply it by the scale the problem gives).", hints.scaling_first),
             paper.each_entry("scaling"), slips=marking.scaling_slips),
    built_in("masking", engine.masking_op, crosscheck.numpy_masking, marking.masking_tolerance,
             hints.OpHint(r"copy ${{ a }}$, then write $-\infty$ wherever {% if mask == 'causal' %}key $j$ "
                          r"comes after query $i${% else %}the mask hides key $j$ from query $i$"
                          r"{% endif %}."),
             paper.each_entry("masking"), slips=marking.masking_slips),
    built_in("softmax", engine.softmax_op, crosscheck.numpy_softmax, marking.softmax_tolerance,
             hints.OpHint("$e$ to the power of each entry of a row of ${{ a }}$, add them up, "
                          "divide each by the sum.", hints.softmax_first, says_places=False),
             paper.softmax_seconds, slips=marking.softmax_slips),
    # a product whose left factor is a row of weights each: marked, shaped and slipped as one
    replace(PRODUCT, name="blend", exact=engine.blend_op, numeric=crosscheck.numpy_blend,
            hint=hints.OpHint("row 1 adds up the rows of ${{ b }}$, each times its weight in row 1 "
                              "of ${{ a }}$.", hints.blend_first),
            seconds=paper.blend_seconds, templates=working_templates("blend"), script=script_file("blend")),
    built_in("add", engine.add_op, crosscheck.numpy_add, marking.add_tolerance,
             hints.OpHint("add the matrices entry by entry."),
             paper.each_entry("product term", "product entry"), drawn_by_own=False,
             shape=steps.same_shapes, slips=marking.add_slips),
    built_in("jacobian", engine.jacobian_op, crosscheck.numpy_jacobian, marking.jacobian_tolerance,
             hints.OpHint(r"on the diagonal $a_i\,(1 - a_i)$; off it $-a_i a_j$.", hints.jacobian_first),
             paper.jacobian_seconds, shape=steps.jacobian_shape, slips=marking.jacobian_slips),
    built_in("softmax-backward", engine.softmax_backward_op, crosscheck.numpy_softmax_backward,
             marking.softmax_backward_tolerance,
             hints.OpHint("row by row: first the dot product of the row of ${{ a }}$ with the row "
                          "of ${{ b }}$; then each entry of ${{ a }}$ times (its entry of ${{ b }}$ "
                          "minus that dot product).", hints.softmax_backward_first),
             paper.softmax_backward_seconds, shape=steps.same_shapes,
             slips=marking.softmax_backward_slips),
    built_in("concat", engine.concat_op, crosscheck.numpy_concat, marking.concat_tolerance,
             hints.OpHint("put the heads' outputs side by side, head 1 on the left."),
             paper.copy_seconds, drawn_by_own=False, shape=steps.concat_shape,
             slips=marking.concat_slips),
):
    register_op(_op)
