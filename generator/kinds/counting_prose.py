"""The counting question's prose (``counting``): its statement, prompts, the notes after each part
(every sentence built from the part's own numbers) and the traps' choices, whose numbers are
worked in ``counting`` and only written here."""

from __future__ import annotations

# The configuration, said once: d_k = d_model/h unless the problem states it, the KV heads as many
# as the heads unless it shares them.
CONFIG = (r"{% set kv = spec.kv_heads or spec.heads %}{% set dk = spec.head_dim or spec.model_dim // "
          r"spec.heads %}")
STATEMENT = (
    CONFIG + r"A Transformer encoder layer has $d_{\text{model}} = {{ spec.model_dim }}$ and "
    r"$h = {{ spec.heads }}$ attention head{{ 's' if spec.heads != 1 }} of width $d_k = d_v = {{ dk }}$"
    r"{% if kv != spec.heads %}, whose keys and values come from {{ kv }} shared key/value "
    r"head{{ 's' if kv != 1 }} ({{ 'multi-query' if kv == 1 else 'grouped-query' }} attention: $W_K$ and "
    r"$W_V$ are $d_{\text{model}} \times {{ kv }} d_k$){% endif %}. Its feed-forward layer is a linear map "
    r"to $d_{\text{ff}} = {{ spec.ffn_dim }}$, a ReLU and a linear map back to $d_{\text{model}}$, and a "
    r"LayerNorm follows each of the two sublayers. "
    r"{% if spec.bias %}Every linear map has a bias, and each LayerNorm a $\gamma$ and a $\beta$."
    r"{% else %}No linear map has a bias, and each LayerNorm has a $\gamma$ and no $\beta$.{% endif %} "
    r"The model stacks $L = {{ spec.layers }}$ such layers and reads $n = {{ spec.tokens }}$ tokens (every "
    r"token attends to every token: $n_q = n_k = n$); each stored value takes {{ spec.bytes_per_value }} "
    r"byte{{ 's' if spec.bytes_per_value != 1 }}.",
    r"Every answer is a whole number: give it exactly, and show each product written out.")
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
        r"{{ kv }} key/value head{{ 's' if kv != 1 }} change?{% endif %}"),
    "count-growth": (
        r"The input grows from $n = {{ spec.tokens }}$ to ${{ 2 * spec.tokens }}$ tokens. How do a layer's "
        r"attention scores ($h \cdot n^2$ values) and the multiplications of its projections ($XW_Q$, "
        r"$XW_K$, $XW_V$ and $CW_O$) grow?"),
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


def trap_choices(c, mha_attention: int) -> dict[str, tuple[tuple[str, str], ...]]:
    """The traps' choices for configuration ``c`` (``counting.Config``), the right one first, each
    with the slip behind it; ``mha_attention`` is the attention's count with a key/value head per
    head and d_k = d_model/h.  The heads trap only where 2h heads split d_model too; the KV heads'
    only where a head can share (h > 1)."""
    choices = {} if c.d % (2 * c.h) else {"count-heads": (
        (f"It stays {mha_attention}: $W_Q$, $W_K$ and $W_V$ are $d_{{\\text{{model}}}} \\times h d_k = "
         f"{c.d} \\times {c.d}$ and $W_O$ is ${c.d} \\times {c.d}$ whatever $h$ is.", ""),
        (f"It doubles, to {2 * mha_attention}.", "each head is half as wide: $h d_k$ stays "
                                                  "$d_{\\text{model}}$, and so does every projection"),
        (f"It halves, to {mha_attention // 2}.", "there are twice as many heads, each half as wide: "
                                                 "the halving and the doubling cancel"),
        ("It depends on $d_{\\text{ff}}$.", "the feed-forward layer is apart from the attention "
                                            "sublayer, and it does not change with $h$ either"))}
    g = c.kv if c.kv != c.h else 1
    if g != c.h:
        full, shared = c.d * c.h * c.dk, c.d * g * c.dk
        cache, shared_cache = 2 * c.layers * c.h * c.dk * c.n * c.b, 2 * c.layers * g * c.dk * c.n * c.b
        choices["count-kv"] = (
            (f"$W_K$ and $W_V$ have {shared} parameters each instead of {full}, and the KV cache takes "
             f"{shared_cache} bytes instead of {cache}; $W_Q$ and $W_O$ are as they were.", ""),
            (f"$W_K$ and $W_V$ shrink to {shared} parameters each, but the KV cache still takes {cache} "
             "bytes.", "the cache keeps the keys and values of each key/value head: fewer heads, "
                       "fewer values cached"),
            (f"The KV cache shrinks to {shared_cache} bytes, but $W_K$ and $W_V$ keep {full} parameters "
             "each.", "$W_K$ maps to one column per key/value head's entry: fewer heads, a narrower "
                      "$W_K$"),
            ("Every projection, $W_Q$ and $W_O$ too, shrinks by the same factor.",
             "every head keeps its own queries: $W_Q$ and $W_O$ are as they were"))
    scores, projections = c.h * c.n * c.n, c.n * c.d * (c.h + 2 * c.kv) * c.dk + c.n * c.h * c.dk * c.d
    choices["count-growth"] = (
        (f"The scores grow 4 times ({scores} to {4 * scores} values), the projections' multiplications "
         f"2 times ({projections} to {2 * projections}).", ""),
        ("Both grow 2 times.", "each score pairs a query with a key: twice the queries and twice "
                               "the keys, 4 times the scores"),
        ("Both grow 4 times.", "a projection works each token once: twice the tokens, twice the "
                               "multiplications"),
        ("The scores grow 2 times, the projections' multiplications 4 times.",
         "the other way round: the scores are $n \\times n$, the projections $n$ rows"))
    return choices
