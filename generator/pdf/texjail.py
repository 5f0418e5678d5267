"""Runs a TeX engine confined by the kernel (Landlock): a teacher's template cannot make it
read a file outside TeX's own trees, the fonts, the system's programs and its work folder,
nor write outside its work folder and the caches it is given.

kpathsea's paranoid settings (``texrun.TEX_ENVIRONMENT``) cover ``\\input`` and
``\\openout``, but not pdfTeX's ``\\pdfobj file {...}`` or an image given by its full path,
which embed any file pdflatex can read into the PDF the students get; no TeX setting
refuses them.  The kernel does: this script restricts its own process, then becomes TeX
(``execv``), so every file TeX opens is checked, whatever primitive opens it.

It is run by path, with ``python -S -I`` (no site, no imports of the project, so it starts
at once: docs/performance.md), as ``texjail.py --read DIR ... --write DIR ... -- tex
args``.  Where the kernel has no Landlock (before Linux 5.13, or switched off), TeX runs as
before.
"""

import ctypes
import functools
import glob
import os
import sys

CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446  # the same on x86-64 and arm64
RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
# What each ABI version knows how to refuse: all of it is refused unless a rule allows it.
HANDLED = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1,
           5: (1 << 16) - 1}
TRUNCATE, IOCTL_DEV = 1 << 14, 1 << 15
FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # what a rule on a file may allow
READING = EXECUTE | READ_FILE | READ_DIR


# What TeX reads besides its work folder: its programs and libraries, TeX Live's trees (as
# Debian lays them out, or TUG's installer), font folders and caches, and a user's own
# TeX trees.  Nothing else a user keeps (~/.ssh, /etc/passwd, a course's files) is in them.
SYSTEM_READ = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc/texmf", "/etc/fonts",
               "/etc/ld.so.cache", "/var/lib/texmf", "/var/cache/fontconfig", "/opt/texlive")
HOME_READ = ("~/texmf", "~/.texlive*", "~/.texmf-var", "~/.texmf-config", "~/.cache/fontconfig",
             "~/.fonts", "~/.local/share/fonts")


def jailed(command: list[str], work: str, readable: tuple[str, ...] = (),
           writable: tuple[str, ...] = ()) -> list[str]:
    """``command`` (a TeX engine) as run through this script: it may read TeX's trees, the
    fonts, ``work`` and ``readable``, and write only in ``work`` and ``writable``."""
    absolute = lambda paths: [os.path.abspath(path) for path in paths]  # noqa: E731 (TeX runs elsewhere)
    return [sys.executable, "-S", "-I", os.path.abspath(__file__),
            "--read", *readable_roots(), installation(command[0]), *absolute(readable),
            "--write", *absolute([work, "/dev/null", *writable]), "--", *command]


def installation(program: str) -> str:
    """The tree a program is installed in: the folder above its last ``bin`` (``/usr``, or
    ``~/texlive/2024`` for TeX Live installed at home); its own folder when that is not
    found, or would be the whole disk."""
    folder = os.path.dirname(os.path.realpath(program))
    parts = folder.split(os.sep)
    if "bin" not in parts:
        return folder
    root = os.sep.join(parts[:len(parts) - 1 - parts[::-1].index("bin")])
    return root if root not in ("", os.sep) else folder


@functools.lru_cache(maxsize=1)
def readable_roots() -> tuple[str, ...]:
    """The folders TeX may read of ``SYSTEM_READ`` and ``HOME_READ``, those that exist here."""
    home = [found for pattern in HOME_READ for found in glob.glob(os.path.expanduser(pattern))]
    return tuple(path for path in (*SYSTEM_READ, *home) if os.path.exists(path))


class RulesetAttr(ctypes.Structure):
    """Landlock's struct landlock_ruleset_attr: the accesses a ruleset handles."""

    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class PathBeneathAttr(ctypes.Structure):
    """Landlock's struct landlock_path_beneath_attr: the accesses allowed beneath an open folder."""

    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def available() -> bool:
    """Whether this kernel confines processes with Landlock."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc.syscall(CREATE_RULESET, None, ctypes.c_size_t(0),
                        ctypes.c_uint32(RULESET_VERSION)) >= 1


def confine(readable: list[str], writable: list[str]) -> bool:
    """Restrict this process (and what it runs) to the given folders; False where the
    kernel cannot (TeX then runs as it would without this script)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(RULESET_VERSION))
    if abi < 1:
        return False
    handled = HANDLED[min(abi, max(HANDLED))]
    attr = RulesetAttr(handled)
    ruleset = libc.syscall(CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        return False
    for paths, access in ((readable, READING), (writable, handled)):
        for path in paths:
            _allow(libc, ruleset, path, access & handled)
    if libc.prctl(NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.syscall(
            RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
        raise OSError(ctypes.get_errno(), "cannot confine TeX")
    os.close(ruleset)
    return True


def _allow(libc, ruleset: int, path: str, access: int) -> None:
    try:
        descriptor = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # not on this machine
    try:
        if not os.path.isdir(path):
            access &= FILE_ONLY
        rule = PathBeneathAttr(access, descriptor)
        if libc.syscall(ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH),
                        ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"cannot allow {path}")
    finally:
        os.close(descriptor)


def main(argv: list[str]) -> None:
    """texjail.py --read DIR ... --write DIR ... -- tex args: confine this process, then become TeX."""
    split = argv.index("--")
    readable, writable = [], []
    current = readable
    for word in argv[:split]:
        if word in ("--read", "--write"):
            current = readable if word == "--read" else writable
        else:
            current.append(word)
    command = argv[split + 1:]
    confine(readable, writable)
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
