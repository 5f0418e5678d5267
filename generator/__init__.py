"""gen-problems: exam-style, fully worked problems on scaled dot-product self-attention."""

# The built-in question types register themselves (their order is kinds.BUILT_IN's).
from .kinds import full, row, mistake, permute, masked, heads, concept, backward  # noqa: F401,I001
from .kinds import softmax_jacobian  # noqa: F401,E402
