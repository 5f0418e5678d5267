"""gen-problems: exam-style, fully worked problems on scaled dot-product self-attention."""

# The built-in question types register themselves (their order is kinds.BUILT_IN's).
from generator.kinds import full, row, mistake, permute, masked, heads, concept, backward  # noqa: F401,I001
from generator.kinds import softmax_jacobian, kv_cache  # noqa: F401,I001
from generator.kinds import cross  # noqa: F401
from generator.kinds import grouped  # noqa: F401
from generator.kinds import counting  # noqa: F401
from generator.kinds import positions  # noqa: F401
from generator.kinds import block  # noqa: F401
from generator.kinds import why_scale  # noqa: F401

# The library's front door (``api``), loaded when first asked for: ``from generator import
# Options, generate``.  Late, so that importing one module of the package (a forked child's,
# a test's) does not load the whole run.
_FRONT_DOOR = {"generate": "running.api", "Result": "running.api", "Options": "running.options",
               "UsageError": "running.options"}
__all__ = list(_FRONT_DOOR)


def __getattr__(name: str):
    if name not in _FRONT_DOOR:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module
    return getattr(import_module(f".{_FRONT_DOOR[name]}", __name__), name)
