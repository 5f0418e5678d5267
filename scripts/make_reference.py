"""docs/reference.md, written from the code: the command line's parser and the registries.

    .venv/bin/python scripts/make_reference.py           # writes docs/reference.md
    .venv/bin/python scripts/make_reference.py --stdout  # prints it instead

Every option with its section and help (``cli.build_parser``), the difficulty presets
(``sampling.PRESETS``), the question types (``kinds``), the steps and ops (``steps.REGISTRY``,
``ops.registered``), the output formats (``formats.FORMATS``), the keys of a spec file
(``spec.known_keys``) and every built-in template with the first comment it holds.  Only
what gen-problems has built in: no installed plugin is loaded.  ``tests/test_reference.py``
fails when the file differs from what this writes.  The generator's own modules know nothing
of this script.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace

import jinja2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator import formats, kinds  # noqa: E402 (after the path above)
from generator.cli import build_parser  # noqa: E402
from generator.kinds.sampling import PRESETS  # noqa: E402
from generator.maths import ops, spec, steps  # noqa: E402
from generator.rendering.template_files import BUILTIN_TEMPLATES  # noqa: E402

OUTPUT = ROOT / "docs" / "reference.md"
COMMAND = ".venv/bin/python scripts/make_reference.py"

# What a spec file's own keys mean; a type's parameters are described below.  A key the
# reader knows that neither table describes stops this script (and so fails the test).
KEYS = {
    "X": "the embeddings, one row per token (of a `kv-cache` problem: the new token's, one row)",
    "X_dec": "instead of X, cross-attention: the decoder's tokens, whose queries attend (n_q × d_dec; "
             "W_Q is d_dec × d_k)",
    "X_enc": "with X_dec: the encoder's tokens, which give the keys and values (n_k × d_enc; W_K "
             "and W_V are d_enc × d_k and d_enc × d_v)",
    "W_Q": "the query weights (d_model × d_k)",
    "W_K": "the key weights (d_model × d_k)",
    "W_V": "the value weights (d_model × d_v)",
    "Q": "instead of X and the weights: the queries directly (may have other rows than K and "
         "V: cross-attention)",
    "K": "instead of X and the weights: the keys directly",
    "V": "instead of X and the weights: the values directly",
    "W_O": "the output projection of a `heads` or `grouped` problem (h·d_v × d_model, h the (query) heads)",
    "gamma": "a `block` problem's LayerNorm scale γ (1 × d_model), both LayerNorms'",
    "beta": "a `block` problem's LayerNorm shift β (1 × d_model), both LayerNorms'",
    "W_1": "a `block` problem's first feed-forward weights (d_model × d_ff)",
    "b_1": "a `block` problem's first feed-forward bias (1 × d_ff)",
    "W_2": "a `block` problem's second feed-forward weights (d_ff × d_model)",
    "b_2": "a `block` problem's second feed-forward bias (1 × d_model)",
    "dO": "the upstream gradient of a `backward` or `softmax-jacobian` problem (the output's "
          "shape)",
    "K_cache": "the cached keys of a `kv-cache` problem's t earlier tokens (t × d_k), with `V_cache`",
    "V_cache": "the cached values of a `kv-cache` problem's t earlier tokens (t × d_v)",
    "X_past": "instead of `K_cache` and `V_cache`: the earlier tokens' embeddings (t × d_model); the "
              "cache is X_past W_K and X_past W_V, and the key shows the full causal pass",
    "mask": '`"none"` (default), `"causal"` (query i sees keys 1..i, top-left aligned as '
            "PyTorch's is_causal), `\"padding\"` (with `valid`), `\"window\"` (with `window`), "
            '`"causal+padding"`, or the mask itself: a matrix n_q × n_k of 0 and `"-inf"` (or of '
            "true/false, true where the query may attend)",
    "valid": "a padding mask's valid lengths: one number (keys after the first `valid` are padding) "
             "or one per query (query i sees its first valid_i keys)",
    "window": "a sliding-window mask's width w: query i sees keys j with i - w < j ≤ i",
    "scale": "the factor applied to the scores before softmax (default 1/√d_k), e.g. "
             '`1` or `"1/2"`',
    "title": "the problem's heading, one line of text",
    "type": "the question type (below); default `full`",
}
# Given steps a type works out from the problem itself: known to the reader, since every
# given step of the registry is, but a file that writes one is refused.
WORKED_OUT = "worked out by its question type from the problem; a file that writes it is refused"
PARAMS = {
    "layers": "`kv-cache`: the size part's model's layers (default 32); `counting`: the layers stacked "
              "(default 6)",
    "head_dim": "`kv-cache`: the size part's model's head width (default 128); `counting`: d_k (default "
                "d_model / heads)",
    "context": "the size part's model: the tokens the cache holds (default 4096)",
    "bytes_per_value": "bytes per stored value, e.g. 2 for fp16 (default)",
    "unit": '`"bytes"`, `"KiB"`, `"MiB"` (default), `"GiB"`, `"KB"`, `"MB"` or `"GB"`: the size asked in',
    "row": "which query's row, counted from 1",
    "norm": '`"post"` (default: LN(x + Sublayer(x)), the original Transformer\'s) or `"pre"` '
            "(x + Sublayer(LN(x))): where a `block` problem's LayerNorms go",
    "mistake": "which common mistake the worked solution makes",
    "swap": "the two tokens that swap places, e.g. `[1, 3]`",
    "head": "`1`: work head 1 alone, the other heads' outputs given",
    "heads": "how many heads: `heads` 2 to 4 (default 2); `grouped` query heads 2 to 8 (default 2); "
             "`counting`: the layer's heads (default 8)",
    "kv_heads": "`grouped`: the key/value heads the query heads share, dividing `heads` (default 1: "
                "multi-query); `kv-cache`: the size part's model's key/value heads per layer (default 8); "
                "`counting`: the layer's key/value heads, dividing `heads` (default: as many as `heads`)",
    "model_dim": "`counting`: d_model (default 512)",
    "ffn_dim": "`counting`: d_ff, the feed-forward layer's width (default 2048)",
    "tokens": "`counting`: n, the tokens read (default 128)",
    "bias": "`counting`: `true` (default): every linear map has a bias and each LayerNorm a β; `false`: none",
    "parts": '`counting`: the parts asked, some of `["parameters", "operations", "memory", "traps"]` '
             "(default all)",
    "places": "`2`: the row of weights given to two places (as without a calculator)",
    "ask": 'its choice parts, e.g. `["why-scale", "ignored-key"]`; `[]` for none',
    "stated_dk": "`why-scale`: the d_k the standard deviations of a score are asked for (default 512)",
    "mask_parts": 'the items of the mask it asks, `["write-mask", "without-mask"]` (by default both '
                  "under any mask but the causal one), `[]` for none",
    "encoding": '`"sinusoidal"` (default), `"rope"` or `"alibi"`: how positions enter',
    "positions": "each token's position, e.g. `[0, 1, 2]` (default: token i at i - 1)",
    "base": "the encoding's base: ω_i (sinusoidal) or θ_i (RoPE) = base^(-2i/d) (default 10000)",
    "theta": 'RoPE\'s angles, one a pair of columns, e.g. `["pi/6"]` (default: base^(-2i/d_k))',
    "shift": "RoPE's offset part: how far token 2's query and token 1's key move on (default 2)",
    "slope": 'ALiBi\'s slope m of the head, e.g. `"1/4"` (default 1/2)',
}


def cell(text: object) -> str:
    """Text for a table cell: one line, its pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def table(header: tuple[str, ...], rows: list[tuple]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return lines + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]


def prose(text: object) -> str:
    """Free text for a cell: what looks like an HTML tag (<defaultgrade>) shown, not read."""
    return str(text).replace("<", "&lt;").replace(">", "&gt;")


def code(text: object) -> str:
    return f"`{text}`" if text not in ("", None) else ""


def options_section() -> list[str]:
    lines = ["## Options", "", "What `gen-problems --help` says, section by section "
             "(`cli.build_parser`, from `generator/running/options.py`).", ""]
    for group in build_parser()._action_groups:
        actions = [a for a in group._group_actions if a.option_strings]
        if not actions or group.title == "options":
            continue
        lines += [f"### {group.title}", ""]
        rows = []
        for action in actions:
            flag = action.option_strings[0]
            takes = ("{" + ",".join(action.choices) + "}" if action.choices
                     else action.metavar or "")
            rows.append((code(f"{flag} {takes}".strip()), prose(action.help)))
        lines += table(("option", "what"), rows) + [""]
    return lines


def presets_section() -> list[str]:
    rows = [(code(name), f"{p.tokens[0]}" if p.tokens[0] == p.tokens[1] else
             f"{p.tokens[0]}-{p.tokens[1]}", p.d_model, p.d_k, p.d_v, p.embeddings, p.weights,
             p.mask) for name, p in PRESETS.items()]
    return ["## Difficulty presets", "", "`--difficulty` (`kinds/sampling.py`'s `PRESETS`); "
            "`--tokens`, `--d-model`, `--dk`, `--dv`, `--embeddings`, `--weights` and `--mask` "
            "override one thing each.", "",
            *table(("preset", "tokens", "d_model", "d_k", "d_v", "X", "weights", "mask"), rows),
            ""]


def plain_title(title: str) -> str:
    """A type's title as the usual problem heads it: "{{ 'Cross' if ... else 'Self' }}" read
    as its else branch (a self-attention problem); a title choosing by the mask, as a causal
    problem's (the masked type's drawn default)."""
    title = re.sub(r"\{\{\s*'[^']*'\s+if\s+[^}]*?\s+else\s+'([^']*)'\s*\}\}", r"\1", title)
    if "{%" in title:
        usual = SimpleNamespace(cross=False, mask="causal", masked=True)
        title = jinja2.Environment().from_string(title).render(spec=usual)
    return title


def types_section() -> list[str]:
    rows = []
    for name in kinds.type_names():
        kind = kinds.TYPES[name]
        params = ", ".join(code(p.name) + ("" if p.default is None else f" (default {p.default})")
                           for p in kind.params)
        rows.append((code(name), plain_title(kind.title), "yes" if kind.in_default_mix else "no",
                     params, ", ".join(code(m) for m in kind.matrices), kind.min_tokens,
                     ", ".join(kind.shrinks)))
    return ["## Question types", "", "The registry `generator/kinds/` (`kinds.TYPES`), in the "
            "order `--types` lists them. *Default mix*: drawn when `--types` is not given. "
            "*Spec keys*: the type's own parameters in a spec file. *Shortened by*: how "
            "`--minutes` or `--marks` makes its problems shorter, in the order tried.", "",
            *table(("type", "title", "default mix", "spec keys", "own given matrices",
                    "fewest tokens", "shortened by"), rows), ""]


WHEN = {"": "always", "scaled": "unless the scale is 1", "masked": "under any mask",
        "causal": "under any mask"}


def steps_section() -> list[str]:
    rows = [(code(name), code(s.op), ", ".join(code(i) for i in s.inputs), code(s.symbol),
             s.marks, WHEN.get(s.when, s.when), s.worded()) for name, s in steps.REGISTRY.items()]
    return ["## Steps", "", "Every step of attention, described once (`generator/maths/"
            "steps.py`, `steps.REGISTRY`): the op that computes it, from which steps, its "
            "symbol (TeX), its default marks and when a problem takes it.", "",
            *table(("step", "op", "from", "symbol", "marks", "when", "formula"), rows), ""]


def ops_section() -> list[str]:
    rows = []
    for name, op in ops.registered().items():
        used = [s for s, d in steps.REGISTRY.items() if d.op == name]
        script = (code(op.script) if isinstance(op.script, ops.ScriptFile)
                  else "inline" if op.script else "none (read, not worked)")
        rows.append((code(name), code(op.templates["latex"]), code(op.templates["markdown"]),
                     script, ", ".join(code(s) for s in used)))
    return ["## Ops", "", "Every op (`generator/maths/ops.py`, `ops.registered()`), each one "
            "object carrying its faces: the engine's exact arithmetic, the numpy check, the "
            "tolerance, the hint, the seconds by hand, the shape rule, the slips the page "
            "names, the templates drawing its working and the practice page's function.", "",
            *table(("op", "LaTeX working", "Markdown working", "page function", "steps"), rows),
            ""]


def formats_section() -> list[str]:
    rows = [(code(name), "always" if d.always else f"`--format {name}`",
             ", ".join(code(f) for f in d.files + tuple(f + "/" for f in d.folders)),
             code(d.prints) if d.prints else "", d.help) for name, d in formats.FORMATS.items()]
    rows.append(("PDF", "`--pdf`", ", ".join(code(f) for f in formats.PDF_FILES + tuple(
        f + "/" for f in formats.PDF_FOLDERS)), "", "compiled from the LaTeX sources; "
        "`papers/` and `keys/` with versions or a roster"))
    return ["## Output formats", "", "The drivers of `generator/formats/` (`formats.FORMATS`). "
            "*Prints*: with `--format NAME` that file is also printed to the terminal.", "",
            *table(("format", "written", "files", "prints", "what"), rows), ""]


def spec_keys_section() -> list[str]:
    params = kinds.spec_keys()
    given = {name: d for name, d in steps.REGISTRY.items() if d.is_given}
    rows = []
    order = list(KEYS)
    for key in sorted(spec.known_keys(), key=lambda k: (
            k in params, k not in KEYS, order.index(k) if k in KEYS else 0, k)):
        if key in params:
            if key not in PARAMS:
                raise SystemExit(f"make_reference: describe the parameter {key!r} in PARAMS")
            rows.append((code(key), PARAMS[key], ", ".join(code(t) for t in params[key])))
        elif key in KEYS:
            takers = [code(t) for t in kinds.type_names()
                      if key in kinds.TYPES[t].matrices + kinds.TYPES[t].may_take]
            rows.append((code(key), KEYS[key], ", ".join(takers) or "every type"))
        elif key in given:
            rows.append((code(key), f"{code(given[key].symbol)}: {WORKED_OUT}", ""))
        else:
            raise SystemExit(f"make_reference: describe the spec key {key!r} in KEYS")
    return ["## Spec file keys", "", "The keys a problem of a spec file may hold "
            "(`generator/maths/spec.py`, `spec.known_keys()`): the problem's own, then each "
            "type's parameters (`kinds.Param`). Entries are numbers or exact strings "
            '(`"1/2"`, `"sqrt(2)/2"`); see the guide\'s "Your own problems".', "",
            *table(("key", "what", "read by"), rows), ""]


def template_description(name: str, text: str) -> str:
    """The first Jinja comment of a template ({# #}, or <# #> in LaTeX); for a script, its
    leading // lines, or the op whose page function it is."""
    if name.endswith(".js"):
        owners = [n for n, op in ops.registered().items() if op.script == name]
        if owners:
            return f"the page's function for the op `{owners[0]}`, set into `practice.js`"
        comment = []
        for line in text.splitlines():
            if not line.startswith("//"):
                break
            comment.append(line[2:].strip())
        return " ".join(comment)
    if name.endswith((".po", ".pot")):  # a catalogue: its first comment lines
        return " ".join(line.lstrip("# ").strip() for line in text.splitlines()[:2]
                        if line.startswith("# "))
    found = re.search(r"(?:\{#|<#)(.*?)(?:#\}|#>)", text, re.DOTALL)
    return found.group(1).strip() if found else ""


def templates_section() -> list[str]:
    rows = []
    for path in sorted(p for p in BUILTIN_TEMPLATES.rglob("*") if p.is_file()):
        name = path.relative_to(BUILTIN_TEMPLATES).as_posix()
        description = template_description(name, path.read_text(encoding="utf-8"))
        if not description:
            raise SystemExit(f"make_reference: templates/{name} has no comment saying what it "
                             f"draws; add one as its first line")
        rows.append((code(name), prose(description)))
    return ["## Templates", "", "Every built-in template, under `templates/`, with what its "
            "first comment says. Copy one into a folder of your own at the same path and pass "
            "`--templates DIR` to change it (see the guide's \"Templates\").", "",
            *table(("template", "what it draws"), rows), ""]


def reference() -> str:
    lines = ["# Reference", "",
             f"Generated from the code by `{COMMAND}`: do not edit it by hand. "
             "`tests/test_reference.py` fails when it is stale. Only what gen-problems has "
             "built in is listed; an installed plugin adds its own types, ops and formats "
             "to `--help`.", "",
             "[Options](#options) · [Difficulty presets](#difficulty-presets) · "
             "[Question types](#question-types) · [Steps](#steps) · [Ops](#ops) · "
             "[Output formats](#output-formats) · [Spec file keys](#spec-file-keys) · "
             "[Templates](#templates)", ""]
    for section in (options_section, presets_section, types_section, steps_section,
                    ops_section, formats_section, spec_keys_section, templates_section):
        lines += section()
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    text = reference()
    if "--stdout" in argv:
        sys.stdout.write(text)
    else:
        OUTPUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
