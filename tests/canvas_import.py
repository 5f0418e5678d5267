"""Canvas's import of a QTI 1.2 package, as its source reads, for the item types the package uses.

Canvas (canvas-lms, gems/plugins/qti_exporter/lib/qti/) converts a 1.2 package to QTI 2.1
with instructure/QTIMigrationTool (lib/imsqtiv1.py), then reads the 2.1 items.  This module
does both in one pass over the 1.2 XML, rule by rule, each rule's source named beside it:

- converter.rb ``is_qti_2``: a manifest with a QTI 2 namespace, or a metadata schema
  saying QTIv2, is taken as 2.x and never converted (nothing of a 1.2 package imports);
- imsqtiv1.py ``QTIASI_ELEMENTS``: an element it does not know, or knows as
  ``Unsupported``, is skipped with everything inside it; ``CheckNMTOKEN``/
  ``ReadIdentifier``: an identifier not starting with a letter or '_' gets a prefix,
  other characters become '-', and ':' and '.' become '_';
  ``QTIMetadataField``: labels lower-cased, ``qmd_`` dropped, only mapped fields kept
  (``question_type``, ``points_possible``, ``assessment_question_identifierref`` ...);
  ``RenderFib`` inside ``response_str``: a string response whatever its fibtype, so
  ``varequal`` becomes ``stringMatch`` and ``vargt``/``vargte``/``varlte`` become
  ``customOperator`` of that class;
- assessment_item_converter.rb: the question's name is the item's title; its type the
  ``question_type`` field when Canvas knows it; points ``max(0, to_f)``, default 1;
  modalFeedback ``general_``/``_all`` -> neutral (general) comments;
- numeric_interaction.rb ``get_canvas_answers``: an ``or`` with a stringMatch is an exact
  answer (``to_f``), unless its vargt and varlte bounds both end in 5 and are symmetric
  a power of ten apart (then a precision answer); margin = BigDecimal(varlte) -
  BigDecimal(exact); an ``and`` alone is a range (vargte, varlte);
- extended_text_interaction.rb (a ``short_answer_question``, fill in the blank): each
  stringMatch (a 1.2 varequal) an answer, a repeated text once; no answer makes it an essay;
  short_answer_question.rb ``matching_answer``: right when the typed text, stripped and
  lower-cased, is an answer's text stripped and lower-cased (both HTML-escaped);
- choice_interaction.rb: each response_label an answer; one set to a positive SCORE is
  correct; one correct answer makes a multiple_choice_question;
- assessment_test_converter.rb: a section with a selection becomes a question group
  (pick count, points per item); other sections are read through, item by item;
- app/models/quizzes/quiz_question/numerical_question.rb: an exact answer accepts
  exact - margin <= answer <= exact + margin (BigDecimal, inclusive); a range accepts
  start..end; the quiz page rounds what a student types to 4 decimal places first.
"""

from __future__ import annotations

import html
import re
import zipfile
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from xml.etree import ElementTree

QTI_2_NAMESPACES = ("http://www.imsglobal.org/xsd/imsqti_v2p0", "http://www.imsglobal.org/xsd/imsqti_v2p1",
                    "http://www.imsglobal.org/xsd/qti/qtiv2p0", "http://www.imsglobal.org/xsd/qti/qtiv2p1")

# imsqtiv1.py QTIASI_ELEMENTS: the 1.2 elements it converts (of those a quiz like ours may use) ...
CONVERTED = {"questestinterop", "assessment", "section", "item", "itemmetadata", "qtimetadata",
             "qtimetadatafield", "fieldlabel", "fieldentry", "presentation", "flow", "flow_mat",
             "material", "mattext", "matbreak", "response_lid", "response_str", "response_num",
             "render_choice", "render_fib", "response_label", "resprocessing", "outcomes", "decvar",
             "respcondition", "conditionvar", "and", "or", "not", "other", "varequal", "vargt",
             "vargte", "varlt", "varlte", "setvar", "displayfeedback", "itemfeedback",
             "selection_ordering", "selection", "selection_number", "selection_extension",
             "points_per_item", "objectives", "rubric", "duration"}
# ... and those it knows only to skip, with everything inside them.
SKIPPED = {"altmaterial", "assessfeedback", "assessmentcontrol", "itemcontrol_extension", "itemrubric",
           "material_ref", "matref", "matvideo", "matapplet", "presentation_material", "reference",
           "response_na", "response_extension", "render_extension", "respcond_extension",
           "sectionfeedback", "sectioncontrol", "sectionref", "var_extension", "qmd_computerscored",
           "qmd_weighting", "durequal", "itempostcondition", "itemprecondition"}
# imsqtiv1.py MDFieldMap: the metadata labels it carries over (after lower-casing, without qmd_).
MAPPED_FIELDS = {"maximumscore", "marks", "name", "syllabusarea", "author", "creator", "owner",
                 "itemtype", "item type", "question type", "status", "layoutstatus", "timelimit",
                 "cc_maxattempts", "cc_weighting", "points_possible", "question_type", "bank_title",
                 "assessment_question_identifierref", "questiontype"}
# AssessmentQuestion::ALL_QUESTION_TYPES
CANVAS_TYPES = {"multiple_choice_question", "true_false_question", "short_answer_question",
                "fill_in_multiple_blanks_question", "multiple_answers_question",
                "multiple_dropdowns_question", "matching_question", "numerical_question",
                "calculated_question", "essay_question", "file_upload_question", "text_only_question"}
NMSTART = re.compile(r"[A-Za-z_:]")
NMTOKEN = re.compile(r"[A-Za-z0-9._:-]")
# Canvas's HTML sanitizer (canvas_sanitize.rb SANITIZE[:elements]) and the MathML it allows.
HTML_ELEMENTS = {"a", "b", "blockquote", "br", "caption", "cite", "code", "col", "hr", "h1", "h2", "h3",
                 "h4", "h5", "h6", "del", "ins", "iframe", "font", "colgroup", "dd", "div", "dl", "dt",
                 "em", "figure", "figcaption", "i", "img", "li", "ol", "p", "pre", "q", "small", "span",
                 "strike", "strong", "sub", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr",
                 "u", "ul", "object", "embed", "param", "video", "audio"}
MATHML_ELEMENTS = {"math", "maction", "menclose", "merror", "mfenced", "mfrac", "mi", "mmultiscripts",
                   "mn", "mo", "mover", "mpadded", "mphantom", "mroot", "mrow", "ms", "mspace", "msqrt",
                   "mstyle", "msub", "msup", "msubsup", "mtable", "mtd", "mtext", "mtr", "munder",
                   "munderover", "semantics", "annotation"}


class ImportError_(Exception):
    """What Canvas would refuse, or silently get wrong."""


@dataclass
class Answer:
    kind: str  # exact_answer, range_answer, precision_answer, or a choice
    exact: float = 0.0
    margin: float = 0.0
    start: float = 0.0
    end: float = 0.0
    precision: int = 0
    text: str = ""
    weight: int = 0


@dataclass
class Question:
    migration_id: str
    name: str
    question_type: str
    points: float
    text: str
    answers: list[Answer] = field(default_factory=list)
    neutral_comments: str = ""


@dataclass
class Quiz:
    title: str
    migration_id: str
    questions: list  # Question, or ("group", pick, points, [Question])


def local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def read_package(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
        return {name: archive.read(name) for name in archive.namelist()}


def check_manifest(files: dict[str, bytes]) -> list[str]:
    """The manifest's rules: a 1.2 package (converter.rb is_qti_2), every file listed, every
    listed file there.  Returns the assessment files."""
    manifest = ElementTree.fromstring(files["imsmanifest.xml"])
    namespaces = set(re.findall(rb'xmlns(?::\w+)?="([^"]+)"', files["imsmanifest.xml"]))
    if any(ns.decode().startswith(QTI_2_NAMESPACES) for ns in namespaces):
        raise ImportError_("a QTI 2 namespace in the manifest: Canvas skips the 1.2 conversion")
    schema = next((e.text or "" for e in manifest.iter() if local(e.tag) == "schema"), "")
    if re.search(r"QTIv2\.", schema, re.I):
        raise ImportError_("the manifest's schema says QTIv2")
    listed = [f.get("href") for f in manifest.iter() if local(f.tag) == "file"]
    missing = [name for name in listed if name not in files]
    unlisted = [name for name in files if name != "imsmanifest.xml" and name not in listed]
    if missing or unlisted:
        raise ImportError_(f"manifest lists {missing} that are missing, omits {unlisted}")
    return listed


def identifier(value: str, prefix: str = "ID-") -> str:
    """imsqtiv1.py CheckNMTOKEN and ReadIdentifier."""
    out = ""
    for c in value.strip():
        if not NMTOKEN.fullmatch(c) and ord(c) < 128:
            c = "-"
        if not out and not NMSTART.fullmatch(c):
            out = prefix
        out += c
    return out.replace(":", "_").replace(".", "_")


def ruby_to_f(text: str) -> float:
    """String#to_f: the longest leading number, else 0.0 ("2,5" -> 2.0)."""
    found = re.match(r"\s*[-+]?(\d[\d_]*)?(\.\d+)?([eE][-+]?\d+)?", text)
    number = found.group(0).replace("_", "") if found else ""
    try:
        return float(number)
    except ValueError:
        return 0.0


def big_decimal(text: str) -> Decimal:
    """Kernel#BigDecimal: the whole string must be a number (raises otherwise)."""
    if not re.fullmatch(r"\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*", text):
        raise InvalidOperation(text)
    return Decimal(text.strip())


def walk(element, path=()):
    """The elements the migration tool converts, in document order; an unknown or Unsupported
    one is reported (everything inside it is skipped)."""
    name = local(element.tag)
    if name in SKIPPED or name not in CONVERTED:
        raise ImportError_(f"<{name}> at {'/'.join(path)} is skipped by the 1.2 conversion")
    for child in element:
        walk(child, (*path, name))


def import_assessment(xml: bytes) -> Quiz:
    root = ElementTree.fromstring(xml)
    walk(root)
    assessment = next(e for e in root if local(e.tag) == "assessment")
    questions = []
    for section in (e for e in assessment if local(e.tag) == "section"):
        questions += read_section(section)
    ident = assessment.get("ident", "")
    return Quiz(assessment.get("title", ""), ident.replace(":", "-"), questions)


def read_section(section) -> list:
    """assessment_test_converter.rb process_section: a selection makes a group."""
    found = []
    for child in section:
        name = local(child.tag)
        if name == "section":
            found += read_section(child)
        elif name == "item":
            found.append(read_item(child))
    selection = section.find(".//{*}selection_number")
    if selection is not None and re.fullmatch(r"\d+", (selection.text or "").strip()):
        points = section.find(".//{*}points_per_item")
        return [("group", int(selection.text), float(points.text) if points is not None else 1.0, found)]
    return found


def fields(item) -> dict[str, str]:
    """imsqtiv1.py QTIMetadataField: lower-cased labels without qmd_; unmapped ones dropped."""
    kept = {}
    for f in item.iter():
        if local(f.tag) == "qtimetadatafield":
            label = (f.findtext("{*}fieldlabel") or "").strip().lower()
            label = label[4:] if label.startswith("qmd_") else label
            if label in MAPPED_FIELDS:
                kept[label] = (f.findtext("{*}fieldentry") or "").strip()
    return kept


def read_item(item) -> Question:
    ident = item.get("ident", "")
    if identifier(ident) != ident:
        raise ImportError_(f"item ident {ident!r} is renamed to {identifier(ident)!r}")
    meta = fields(item)
    question_type = meta.get("question_type", "")
    if question_type not in CANVAS_TYPES:
        raise ImportError_(f"{ident}: question_type {question_type!r} is not one Canvas knows")
    points = max(ruby_to_f(meta["points_possible"]), 0.0) if "points_possible" in meta else 1.0
    presentation = item.find("{*}presentation")
    texts = [m.text or "" for m in presentation.iter() if local(m.tag) == "mattext"
             and not _inside(presentation, m, "response_label")]
    question = Question(ident.replace(":", "-"), item.get("title", ""), question_type, points,
                        "\n".join(texts))
    for feedback in item.findall("{*}itemfeedback"):
        if re.search(r"general_|_all", identifier(feedback.get("ident", ""), "FEEDBACK_"), re.I):
            question.neutral_comments = "".join(m.text or "" for m in feedback.iter()
                                                if local(m.tag) == "mattext")
    conditions = item.findall("{*}resprocessing/{*}respcondition")
    if question_type == "numerical_question":
        response = presentation.find(".//{*}response_str")
        if response is None or response.find("{*}render_fib") is None:
            raise ImportError_(f"{ident}: a numerical question needs response_str/render_fib")
        question.answers = [a for c in conditions if (a := numeric_answer(c)) is not None]
    elif question_type == "short_answer_question":
        texts = [(m.text or "").strip() for c in conditions for m in c.iter() if local(m.tag) == "varequal"]
        question.answers = [Answer("text", text=t, weight=100) for t in dict.fromkeys(texts) if t]
        if not question.answers:
            raise ImportError_(f"{ident}: a short answer with no answer imports as an essay")
    elif question_type == "multiple_choice_question":
        question.answers = choice_answers(presentation, conditions)
        if sum(a.weight > 0 for a in question.answers) != 1:
            raise ImportError_(f"{ident}: a multiple choice needs exactly one correct answer")
    return question


def _inside(root, target, name) -> bool:
    return any(target in list(e.iter()) for e in root.iter() if local(e.tag) == name)


def numeric_answer(condition) -> Answer | None:
    """numeric_interaction.rb get_canvas_answers, on what the 1.2 conversion makes of it."""
    variables = condition.find("{*}conditionvar")
    either = variables.find("{*}or")
    if either is not None:
        exact_node = either.find("{*}varequal")  # on a string response: stringMatch
        if exact_node is None:
            return None
        exact = (exact_node.text or "").strip()
        bounds = either.find("{*}and")
        lower = bounds.find("{*}vargt") if bounds is not None else None
        upper = bounds.find("{*}varlte") if bounds is not None else None
        if lower is not None and upper is not None and all(
                re.sub(r"[0.]", "", n.text).endswith("5") for n in (lower, upper)):
            low, high, mid = (Decimal(n.text) for n in (lower, upper, exact_node))
            if mid - low == high - mid and (high - low).normalize().as_tuple().digits == (1,):
                return Answer("precision_answer", exact=float(mid))  # the exact+margin is lost
        margin = 0.0
        if upper is not None:
            try:
                margin = float(big_decimal(upper.text) - big_decimal(exact))
            except InvalidOperation:
                margin = 0.0  # `rescue "0.0"`
        return Answer("exact_answer", exact=ruby_to_f(exact), margin=margin)
    both = variables.find("{*}and")
    if both is not None:
        lower, upper = both.find("{*}vargte"), both.find("{*}varlte")
        if lower is None and upper is None:
            return None
        return Answer("range_answer", start=ruby_to_f(lower.text) if lower is not None else 0.0,
                      end=ruby_to_f(upper.text) if upper is not None else 0.0)
    return None


def choice_answers(presentation, conditions) -> list[Answer]:
    """choice_interaction.rb: each label an answer, weighted 100 when a condition that matches
    it sets SCORE above 0."""
    answers = {identifier(label.get("ident", ""), "RESPONSE_"): Answer(
        "choice", text="".join(m.text or "" for m in label.iter() if local(m.tag) == "mattext"))
        for label in presentation.iter() if local(label.tag) == "response_label"}
    for condition in conditions:
        match = condition.find("{*}conditionvar/{*}varequal")
        score = condition.find("{*}setvar")
        if match is not None and score is not None:
            answer = answers.get(identifier(match.text or "", "RESPONSE_"))
            if answer is not None and ruby_to_f(score.text or "") > 0:
                answer.weight = 100
    return list(answers.values())


def typed(text: str) -> Decimal | None:
    """What the quiz page scores of a typed answer: the number, to 4 decimal places."""
    try:
        return big_decimal(text).quantize(Decimal("0.0001"), ROUND_HALF_UP)
    except InvalidOperation:
        return None


def accepts(question: Question, text: str) -> bool:
    """numerical_question.rb: right when any answer accepts it."""
    answer = typed(text)
    if answer is None:
        return False
    for a in question.answers:
        if a.kind == "exact_answer":
            exact, margin = Decimal(repr(a.exact)), Decimal(repr(a.margin))
            if exact - margin <= answer <= exact + margin:
                return True
        elif a.kind == "range_answer":
            low, high = sorted((Decimal(repr(a.start)), Decimal(repr(a.end))))
            if low <= answer <= high:
                return True
    return False


def accepts_text(question: Question, text: str) -> bool:
    """short_answer_question.rb matching_answer: the typed text, HTML-escaped, stripped and
    lower-cased, is an answer's text stripped, lower-cased and HTML-escaped."""
    typed_text = html.escape(text, quote=True).strip().lower()
    return any(a.text and html.escape(a.text.strip().lower(), quote=True) == typed_text
               for a in question.answers)


def html_elements(html: str) -> set[str]:
    return {name.lower() for name in re.findall(r"<([A-Za-z][\w-]*)", html)}


def import_package(path) -> list[Quiz]:
    files = read_package(path)
    return [import_assessment(files[name]) for name in check_manifest(files)]
