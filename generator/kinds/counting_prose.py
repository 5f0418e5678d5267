"""The counting question's prose (``counting``): its statement, prompts, the notes after each part
(every sentence built from the part's own numbers) and the traps' choices, whose numbers are
worked in ``counting`` and only written here."""

from __future__ import annotations

from generator.rendering.language import N_

# The configuration, said once: d_k = d_model/h unless the problem states it, the KV heads as many
# as the heads unless it shares them.
CONFIG = (r"{% set kv = spec.kv_heads or spec.heads %}{% set dk = spec.head_dim or spec.model_dim // "
          r"spec.heads %}")
STATEMENT = (
    CONFIG + r"A Transformer encoder layer has $d_{\text{model}} = {{ spec.model_dim }}$ and "
    r"$h = {{ spec.heads }}$ attention {% if spec.heads == 1 %}head{% else %}heads{% endif %} of width "
    r"$d_k = d_v = {{ dk }}${% if kv != spec.heads %}, whose keys and values come from {{ kv }} shared "
    r"key/value {% if kv == 1 %}head{% else %}heads{% endif %} ({% if kv == 1 %}multi-query{% else %}"
    r"grouped-query{% endif %} attention: $W_K$ and "
    r"$W_V$ are $d_{\text{model}} \times {{ kv }} d_k$){% endif %}. Its feed-forward layer is a linear map "
    r"to $d_{\text{ff}} = {{ spec.ffn_dim }}$, a ReLU and a linear map back to $d_{\text{model}}$, and a "
    r"LayerNorm follows each of the two sublayers. "
    r"{% if spec.bias %}Every linear map has a bias, and each LayerNorm a $\gamma$ and a $\beta$."
    r"{% else %}No linear map has a bias, and each LayerNorm has a $\gamma$ and no $\beta$.{% endif %} "
    r"The model stacks $L = {{ spec.layers }}$ such layers and reads $n = {{ spec.tokens }}$ tokens (every "
    r"token attends to every token: $n_q = n_k = n$); each stored value takes {{ spec.bytes_per_value }} "
    r"{% if spec.bytes_per_value == 1 %}byte{% else %}bytes{% endif %}.",
    r"Every answer is a whole number, to be given exactly; on paper, write each count as its products "
    r"before multiplying them out.")
PROMPTS = {
    "count-parameters": (
        r"Count the learnable parameters: of the attention sublayer ($W_Q$, $W_K$, $W_V$, $W_O$"
        r"{% if spec.bias %} and their biases{% endif %}), of the feed-forward layer, of the two "
        r"LayerNorms, of one layer in all, and of all $L$ layers."),
    "count-operations": (
        r"For one head of one layer: count the multiplications and the additions of $QK^{\top}$ "
        r"($n \times n$ scores, each a dot product of length $d_k$); the operations of the scaling and the "
        r"softmax (a scaling and an exponential per score, the additions of each row's sum, a division "
        r"per weight); the multiplications and the additions of $AV$; the multiplications of the whole "
        r"layer's projections, $XW_Q$, $XW_K$, $XW_V$ and the heads' outputs side by side, $C$, times "
        r"$W_O$; and the FLOPs of the head's two products $QK^{\top}$ and $AV$, counting a multiply-add "
        r"as 2 FLOPs (as FLOP counters do)."),
    "count-memory": (
        r"Count the bytes of the attention scores of one layer ($n \times n$ for each of the $h$ heads), "
        r"and of the KV cache: every layer's keys and values of all $n$ tokens, for each key/value head."),
    "count-heads": (
        r"At a fixed $d_{\text{model}} = {{ spec.model_dim }}$, a multi-head layer (a key/value head per "
        r"head) doubles its heads from $h = {{ spec.heads }}$ to ${{ 2 * spec.heads }}$, each head "
        r"$d_{\text{model}}/h$ wide. What happens to its attention sublayer's parameters ($W_Q$, $W_K$, "
        r"$W_V$, $W_O${% if spec.bias %} and biases{% endif %})?"),
    "count-kv": (
        CONFIG + r"{% if kv == spec.heads %}Had the layer shared a single key/value head among its "
        r"{{ spec.heads }} heads (multi-query attention), what would change?{% else %}Compared with plain "
        r"multi-head attention ({{ spec.heads }} key/value heads, one per head), what does sharing "
        r"{{ kv }} key/value {% if kv == 1 %}head{% else %}heads{% endif %} change?{% endif %}"),
    "count-growth": (
        r"The input grows from $n = {{ spec.tokens }}$ to ${{ 2 * spec.tokens }}$ tokens. How do a layer's "
        r"attention scores ($h \cdot n^2$ values) and the multiplications of its projections ($XW_Q$, "
        r"$XW_K$, $XW_V$ and $CW_O$, $C$ the heads' outputs side by side) grow?"),
}
AFTER = {
    "count-parameters": (
        r"The feed-forward layer holds about {{ part.answer[0] }}% of a layer's parameters and the "
        r"attention sublayer about {{ part.answer[1] }}%; the LayerNorms hold the rest."),
    "count-operations": (
        r"$QK^{\top}$ takes ${{ part.answer[0] }}$ multiplications but ${{ part.answer[1] }}$ additions: "
        r"each score adds $d_k$ products, $d_k - 1$ additions. A FLOP counter counts each "
        r"multiply-add as 2 FLOPs, so its count of a product is twice the multiplications, a little "
        r"more than the multiplications and additions together."),
    "count-memory": (
        r"The scores grow as $n^2$ and the cache as $n$: at $n = {{ part.answer[0] }}$ tokens the scores "
        r"would take {{ part.answer[1] }} bytes and the cache {{ part.answer[2] }} bytes."),
}


# Why each trap's right choice is right, said in the key (the choices themselves state no count:
# a number in a choice could be the answer of a part beside it).
WHY = {
    "count-heads": (r"At a fixed $d_{\text{model}}$, $h d_k = d_{\text{model}}$ whatever $h$ is: $W_Q$, "
                    r"$W_K$ and $W_V$ stay $d_{\text{model}} \times d_{\text{model}}$, and so does $W_O$."),
    "count-kv": (r"$W_K$, $W_V$ and the cache each have a column, or a stored value, per key/value head's "
                 r"entry, so the three shrink by one factor; every head keeps its own queries, so $W_Q$ and "
                 r"$W_O$ do not change."),
    "count-growth": (r"The scores are $h \cdot n \times n$: twice the queries times twice the keys, four "
                     r"times as many; a projection works each token once, so its multiplications double."),
}


def trap_choices(c, heads_asked: bool) -> dict[str, tuple[tuple[str, str], ...]]:
    """The traps' choices for configuration ``c`` (``counting.Config``), the right one first, each
    with the slip behind it.  Every choice says what changes in words (unchanged, halves, four
    times), never a count, and all four of a trap alike in form and length, so that neither the
    choices give away a part's answer nor the right one stands out.  The heads trap where the
    question asks it (``heads_asked``); the KV heads' only where a head can share (h > 1)."""
    choices = {} if not heads_asked else {"count-heads": (
        (N_("They stay the same."), ""),
        (N_("They double."),
         N_("each head is half as wide: $h d_k$ stays $d_{\\text{model}}$, and so does every projection")),
        (N_("They halve."),
         N_("there are twice as many heads, each half as wide: the halving and the doubling cancel")),
        (N_("They grow four times."),
         N_("$W_Q$, $W_K$, $W_V$ and $W_O$ stay $d_{\\text{model}}$ wide on both sides: nothing in them "
            "grows")))}
    if c.h > 1:
        choices["count-kv"] = (
            (N_("$W_K$, $W_V$ and the KV cache shrink; $W_Q$ and $W_O$ stay the same."), ""),
            (N_("$W_K$ and $W_V$ shrink; the KV cache, $W_Q$ and $W_O$ stay as they were."),
             N_("the cache keeps the keys and values of each key/value head: fewer heads, fewer values "
             "cached")),
            (N_("The KV cache shrinks; $W_K$, $W_V$, $W_Q$ and $W_O$ stay as they were."),
             N_("$W_K$ maps to one column per key/value head's entry: fewer heads, a narrower $W_K$")),
            (N_("$W_Q$, $W_K$, $W_V$, $W_O$ and the KV cache all shrink alike."),
             N_("every head keeps its own queries: $W_Q$ and $W_O$ are as they were")))
    choices["count-growth"] = (
        (N_("The scores grow four times, the projections' multiplications double."), ""),
        (N_("The scores double, the projections' multiplications double."),
         N_("each score pairs a query with a key: twice the queries and twice the keys, four times the "
         "scores")),
        (N_("The scores grow four times, the projections' multiplications grow four times."),
         N_("a projection works each token once: twice the tokens, twice the multiplications")),
        (N_("The scores double, the projections' multiplications grow four times."),
         N_("the other way round: the scores are $n \\times n$, the projections $n$ rows")))
    return choices
